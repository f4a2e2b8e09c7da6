"""`planner cases ...` on a database of its own."""

import yaml

from planner.cli import main


def test_add_list_show_export_import_and_prune(tmp_path, capsys):
    database = str(tmp_path / "cases.sqlite")
    assert main(["cases", "add", "--database", database, "--id", "human-mop", "--skill", "pick", "--code", "grasp_lost",
                 "--request", "Mop the floor", "--reason", "the mop slipped", "--suggestion", "Hold the mop lower."]) == 0
    assert "added human-mop" in capsys.readouterr().out
    assert main(["cases", "add", "--database", database, "--id", "human-mop", "--skill", "PICK", "--code", "GRASP_LOST",
                 "--request", "r", "--reason", "q", "--suggestion", "s"]) == 2
    assert "exists already" in capsys.readouterr().err
    assert main(["cases", "add", "--database", database, "--skill", "PICK", "--code", "GRASP_LOTS",
                 "--request", "r", "--reason", "q", "--suggestion", "s"]) == 2
    assert "code: unknown failure code 'GRASP_LOTS'" in capsys.readouterr().err

    assert main(["cases", "list", "--database", database, "--source", "human"]) == 0
    listed = capsys.readouterr()
    assert "human-mop" in listed.out and "PICK" in listed.out and "GRASP_LOST" in listed.out
    assert listed.err.startswith("1 of ")          # the seed cases are in the database too
    assert main(["cases", "show", "--database", database, "human-mop"]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert shown["suggestion"] == "Hold the mop lower." and shown["source"] == "human"
    assert main(["cases", "show", "--database", database, "nope"]) == 2

    exported = tmp_path / "human.yaml"
    assert main(["cases", "export", "--database", database, "--source", "human", str(exported)]) == 0
    assert [case["id"] for case in yaml.safe_load(exported.read_text())] == ["human-mop"]
    other = str(tmp_path / "other.sqlite")
    assert main(["cases", "import", "--database", other, str(exported)]) == 0
    assert "added 1 of 1 cases" in capsys.readouterr().out
    assert main(["cases", "show", "--database", other, "human-mop"]) == 0

    from planner.core.case_store import CaseStore

    store = CaseStore(database)
    for _ in range(2):
        store.record_outcome("human-mop", helped=False, demote_after=2)
    store.close()
    assert main(["cases", "prune", "--database", database, "--dry-run"]) == 0
    assert "would remove human-mop" in capsys.readouterr().out
    assert main(["cases", "prune", "--database", database]) == 0
    assert "1 demoted cases pruned" in capsys.readouterr().out
    assert main(["cases", "show", "--database", database, "human-mop"]) == 2


def test_a_bad_import_file_is_refused_naming_the_entry_and_field(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("- {id: a, skill: PICK, code: GRASP_LOST, request: r, reason: q, suggestion: s}\n- {id: b, skill: PICK}\n")
    assert main(["cases", "import", "--database", str(tmp_path / "c.sqlite"), str(bad)]) == 2
    assert "bad.yaml: 1.code: Field required" in capsys.readouterr().err


def test_a_file_named_with_database_that_is_no_case_database_is_left_as_it_is(tmp_path, capsys):
    """`planner cases list --database notes.txt` renamed the user's notes to notes.txt.corrupt-… and
    made a new database in their place."""
    notes = tmp_path / "notes.txt"
    notes.write_text("call the plumber on Monday\n" * 50)
    assert main(["cases", "list", "--database", str(notes)]) != 0
    assert f"{notes} is not a case database" in capsys.readouterr().err
    assert notes.read_text() == "call the plumber on Monday\n" * 50
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
