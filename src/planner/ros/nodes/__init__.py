"""The stack's nodes, one per box of the architecture, each a thin adapter around core objects."""
