"""What homes are made of, for generated benchmarks: kinds of things with the label a semantic
mapper gives them, the names people use, what they are for, how big they are, where they stand
and what the mapper mistakes them for; kinds of rooms and what they hold.

This vocabulary is the generator's alone: no prompt, example or rule of the stack may read it,
so that what the generated benchmarks measure is not what the stack was told.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    label: str                          # what the mapper calls it
    names: tuple[str, ...]              # what people call it, most common first
    size: tuple[float, float, float]    # typical width, depth, height (m); generated sizes vary ±20%
    furniture: bool = False
    uses: tuple[str, ...] = ()          # keys of USES
    classes: tuple[str, ...] = ()       # keys of CLASSES
    confused_with: tuple[str, ...] = ()  # labels the mapper gives it by mistake
    surface: bool = False               # things are put on it
    container: bool = False             # things are put in it


# What people want a thing for: the phrases a need is asked in ("something to ...", "I ...").
USES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "sit": (("something to sit on", "a place to sit", "somewhere I can sit down"),
            ("my feet hurt, I need to sit down", "I'd like to take a seat")),
    "lie": (("somewhere to lie down", "a place to stretch out"),
            ("I want to have a nap", "my back aches, I need to lie flat")),
    "drink": (("something to drink", "a beverage"),
              ("my mouth is dry", "I could use a drink")),
    "eat": (("something to eat", "a snack"),
            ("my stomach is rumbling", "I skipped lunch and need food")),
    "cut": (("something to cut with", "a tool for slicing"),
            ("I need to slice a tomato", "I have to cut this string")),
    "write": (("something to write with", "a thing to take notes with"),
              ("I need to jot down a phone number", "I want to sign a letter")),
    "read": (("something to read", "reading material"),
             ("I'm bored and want to read", "I'd like to read for a while")),
    "warm": (("something to keep me warm", "a thing to wrap up in"),
             ("I'm freezing", "it's chilly and I'm shivering")),
    "dry": (("something to dry myself with",),
            ("my hands are wet", "I just washed my face and it's dripping")),
    "wash": (("somewhere to wash my hands", "a place with running water"),
             ("my hands are sticky", "I need to rinse this plate")),
    "cook": (("something to cook on", "a place to heat food"),
             ("I want to boil some pasta", "I need to warm up soup")),
    "cold": (("somewhere to keep food cold",),
             ("this butter will melt if I leave it out", "I need to chill a drink")),
    "watch": (("something to watch a film on", "a screen"),
              ("I want to see the match tonight",)),
    "light": (("something that gives light", "a light source"),
              ("it's too dark to read here",)),
    "call": (("something to call someone with", "a device for phoning"),
             ("I need to ring my sister",)),
    "carry": (("something to carry things in", "a bag or box to hold stuff"),
              ("I need to take these groceries upstairs",)),
    "rubbish": (("somewhere to throw rubbish", "a place for waste"),
                ("where can I get rid of this wrapper?",)),
    "store_clothes": (("somewhere to keep clothes", "a place to hang a coat"),
                      ("I need to put my shirts away",)),
    "work": (("a surface to work at", "somewhere to set up a laptop"),
             ("I have emails to answer at a proper surface",)),
    "music": (("something to play music on", "an instrument"),
              ("I feel like playing a tune",)),
    "heal": (("something for a headache", "medicine"),
             ("my head is pounding", "I cut my finger and need a plaster")),
    "clean": (("something to clean up a spill with",),
              ("I spilled coffee on the floor",)),
}

# Groups of kinds people ask for by a common name ("a seat", "any fruit").
CLASSES: dict[str, tuple[str, ...]] = {
    "seat": ("seat", "place to sit"), "table": ("table", "surface"), "fruit": ("fruit", "piece of fruit"),
    "drink": ("drink", "beverage"), "utensil": ("utensil", "piece of cutlery"), "screen": ("screen", "display"),
    "storage": ("cupboard", "storage unit"), "vessel": ("cup", "drinking vessel"), "light": ("lamp", "light"),
    "appliance": ("appliance", "machine"), "bedding": ("bedding",), "paper": ("paper thing", "printed thing"),
}

K = Kind
KINDS: tuple[Kind, ...] = (
    # furniture
    K("sofa", ("couch", "sofa", "settee"), (2.0, 0.9, 0.8), True, ("sit", "lie"), ("seat",), ("bed", "armchair"),
      surface=True),
    K("armchair", ("armchair", "easy chair", "recliner"), (0.8, 0.8, 0.9), True, ("sit",), ("seat",),
      ("sofa", "chair")),
    K("chair", ("chair",), (0.45, 0.45, 0.9), True, ("sit",), ("seat",), ("stool", "armchair")),
    K("stool", ("stool", "bar stool"), (0.35, 0.35, 0.65), True, ("sit",), ("seat",), ("chair", "table")),
    K("bench", ("bench",), (1.2, 0.4, 0.45), True, ("sit",), ("seat",), ("table", "shelf"), surface=True),
    K("bed", ("bed",), (1.6, 2.0, 0.5), True, ("lie", "sit"), ("bedding",), ("sofa", "table"), surface=True),
    K("dining_table", ("dining table", "table"), (1.6, 0.9, 0.75), True, ("work",), ("table",),
      ("desk", "counter"), surface=True),
    K("desk", ("desk", "writing desk"), (1.2, 0.6, 0.75), True, ("work",), ("table",),
      ("dining_table", "counter"), surface=True),
    K("coffee_table", ("coffee table", "low table"), (1.0, 0.55, 0.42), True, (), ("table",),
      ("bench", "dining_table"), surface=True),
    K("side_table", ("side table", "end table"), (0.5, 0.5, 0.6), True, (), ("table",), ("stool", "nightstand"),
      surface=True),
    K("counter", ("counter", "worktop", "countertop"), (1.8, 0.6, 0.9), True, ("work",), ("table",),
      ("dining_table", "cabinet"), surface=True),
    K("refrigerator", ("fridge", "refrigerator"), (0.7, 0.7, 1.8), True, ("cold",), ("appliance",),
      ("cabinet", "wardrobe"), container=True),
    K("cabinet", ("cupboard", "cabinet"), (0.8, 0.45, 0.9), True, (), ("storage",), ("dresser", "refrigerator"),
      surface=True, container=True),
    K("wardrobe", ("wardrobe", "closet"), (1.2, 0.6, 2.0), True, ("store_clothes",), ("storage",),
      ("cabinet", "refrigerator"), container=True),
    K("dresser", ("chest of drawers", "dresser"), (1.0, 0.5, 0.9), True, ("store_clothes",), ("storage",),
      ("cabinet", "nightstand"), surface=True, container=True),
    K("bookcase", ("bookshelf", "bookcase", "set of shelves"), (1.0, 0.35, 1.8), True, (), ("storage",),
      ("cabinet", "wardrobe"), surface=True, container=True),
    K("nightstand", ("bedside table", "nightstand"), (0.45, 0.4, 0.55), True, (), ("table", "storage"),
      ("side_table", "cabinet"), surface=True, container=True),
    K("sink", ("sink", "basin"), (0.6, 0.5, 0.9), True, ("wash",), (), ("counter", "toilet")),
    K("stove", ("stove", "cooker", "hob"), (0.6, 0.6, 0.9), True, ("cook",), ("appliance",), ("oven", "counter"),
      surface=True),
    K("microwave", ("microwave",), (0.5, 0.4, 0.3), True, ("cook",), ("appliance",), ("oven", "tv_monitor"),
      container=True),
    K("toilet", ("toilet", "loo"), (0.4, 0.65, 0.8), True, (), (), ("sink", "chair")),
    K("bathtub", ("bathtub", "tub", "bath"), (1.7, 0.75, 0.55), True, ("wash",), (), ("bed", "sink")),
    K("washing_machine", ("washing machine", "washer"), (0.6, 0.6, 0.85), True, (), ("appliance",),
      ("dishwasher", "cabinet")),
    K("dishwasher", ("dishwasher",), (0.6, 0.6, 0.85), True, (), ("appliance",), ("washing_machine", "cabinet")),
    K("tv_monitor", ("television", "tv", "telly"), (1.1, 0.1, 0.65), True, ("watch",), ("screen",),
      ("monitor", "picture")),
    K("piano", ("piano",), (1.5, 0.6, 1.2), True, ("music",), (), ("dining_table", "desk"), surface=True),
    K("floor_lamp", ("floor lamp", "standing lamp", "lamp"), (0.35, 0.35, 1.6), True, ("light",), ("light",),
      ("plant", "coat_rack")),
    K("coat_rack", ("coat rack", "coat stand"), (0.45, 0.45, 1.7), True, ("store_clothes",), (),
      ("floor_lamp", "plant")),
    K("trash_can", ("bin", "trash can", "rubbish bin"), (0.35, 0.35, 0.6), True, ("rubbish",), (),
      ("basket", "stool")),
    # things on, in and beside furniture
    K("mug", ("mug",), (0.09, 0.09, 0.1), False, (), ("vessel",), ("cup", "bowl")),
    K("cup", ("cup", "teacup"), (0.08, 0.08, 0.09), False, (), ("vessel",), ("mug", "bowl")),
    K("wine_glass", ("glass", "wine glass"), (0.08, 0.08, 0.2), False, (), ("vessel",), ("vase", "bottle")),
    K("water_bottle", ("water", "bottle of water"), (0.07, 0.07, 0.25), False, ("drink",), ("drink",),
      ("vase", "bottle")),
    K("juice_carton", ("juice", "carton of juice"), (0.08, 0.06, 0.2), False, ("drink",), ("drink",),
      ("box", "milk_carton")),
    K("milk_carton", ("milk",), (0.08, 0.08, 0.22), False, ("drink",), ("drink",), ("juice_carton", "box")),
    K("soda_can", ("soda", "can of cola", "fizzy drink"), (0.07, 0.07, 0.12), False, ("drink",), ("drink",),
      ("cup", "bottle")),
    K("teapot", ("teapot", "pot of tea"), (0.2, 0.15, 0.15), False, ("drink",), ("drink",), ("vase", "bowl")),
    K("apple", ("apple",), (0.08, 0.08, 0.08), False, ("eat",), ("fruit",), ("orange", "ball")),
    K("banana", ("banana",), (0.18, 0.05, 0.04), False, ("eat",), ("fruit",), ("knife", "remote")),
    K("orange", ("orange", "tangerine"), (0.08, 0.08, 0.08), False, ("eat",), ("fruit",), ("apple", "ball")),
    K("pear", ("pear",), (0.07, 0.07, 0.1), False, ("eat",), ("fruit",), ("apple", "vase")),
    K("sandwich", ("sandwich",), (0.15, 0.1, 0.05), False, ("eat",), (), ("book", "box")),
    K("cereal_box", ("cereal", "box of cereal"), (0.2, 0.07, 0.3), False, ("eat",), (), ("book", "box")),
    K("bread", ("bread", "loaf"), (0.25, 0.12, 0.1), False, ("eat",), (), ("pillow", "box")),
    K("knife", ("knife",), (0.22, 0.03, 0.02), False, ("cut",), ("utensil",), ("fork", "spoon")),
    K("fork", ("fork",), (0.19, 0.03, 0.02), False, (), ("utensil",), ("knife", "spoon")),
    K("spoon", ("spoon",), (0.17, 0.04, 0.02), False, (), ("utensil",), ("fork", "knife")),
    K("scissors", ("scissors", "pair of scissors"), (0.2, 0.08, 0.02), False, ("cut",), (), ("knife", "pen")),
    K("pen", ("pen", "biro"), (0.14, 0.01, 0.01), False, ("write",), (), ("pencil", "knife")),
    K("pencil", ("pencil",), (0.18, 0.01, 0.01), False, ("write",), (), ("pen", "fork")),
    K("notebook", ("notebook", "notepad"), (0.15, 0.21, 0.02), False, (), ("paper",), ("book", "laptop")),
    K("book", ("book", "novel"), (0.15, 0.23, 0.03), False, ("read",), ("paper",), ("notebook", "box")),
    K("magazine", ("magazine",), (0.21, 0.28, 0.01), False, ("read",), ("paper",), ("book", "newspaper")),
    K("newspaper", ("newspaper", "paper"), (0.3, 0.4, 0.01), False, ("read",), ("paper",), ("magazine", "towel")),
    K("laptop", ("laptop", "computer"), (0.34, 0.24, 0.03), False, ("work",), ("screen",), ("book", "tablet")),
    K("tablet", ("tablet", "ipad"), (0.25, 0.17, 0.01), False, ("read", "watch"), ("screen",),
      ("laptop", "book")),
    K("cell_phone", ("phone", "mobile", "smartphone"), (0.07, 0.15, 0.01), False, ("call",), ("screen",),
      ("remote", "tablet")),
    K("remote", ("remote", "remote control", "clicker"), (0.05, 0.18, 0.02), False, (), (),
      ("cell_phone", "banana")),
    K("blanket", ("blanket", "throw"), (0.6, 0.4, 0.1), False, ("warm",), ("bedding",), ("towel", "pillow")),
    K("sweater", ("sweater", "jumper", "pullover"), (0.4, 0.3, 0.05), False, ("warm",), (), ("towel", "blanket")),
    K("pillow", ("pillow", "cushion"), (0.45, 0.35, 0.12), False, (), ("bedding",), ("blanket", "bag")),
    K("towel", ("towel",), (0.4, 0.25, 0.05), False, ("dry", "clean"), (), ("blanket", "sweater")),
    K("paper_towels", ("kitchen roll", "paper towels"), (0.12, 0.12, 0.25), False, ("clean", "dry"), (),
      ("bottle", "vase")),
    K("sponge", ("sponge",), (0.1, 0.07, 0.04), False, ("clean",), (), ("soap", "box")),
    K("soap", ("soap", "bar of soap"), (0.09, 0.06, 0.03), False, ("wash",), (), ("sponge", "box")),
    K("pill_bottle", ("pills", "painkillers", "medicine"), (0.05, 0.05, 0.09), False, ("heal",), (),
      ("bottle", "cup")),
    K("first_aid_kit", ("first aid kit", "medical kit"), (0.3, 0.2, 0.1), False, ("heal",), (),
      ("box", "bag")),
    K("backpack", ("backpack", "rucksack"), (0.3, 0.2, 0.45), False, ("carry",), (), ("bag", "box")),
    K("basket", ("basket",), (0.4, 0.3, 0.25), False, ("carry",), (), ("box", "bowl")),
    K("cardboard_box", ("box", "cardboard box"), (0.4, 0.3, 0.3), False, ("carry",), (), ("basket", "cabinet")),
    K("table_lamp", ("lamp", "reading lamp", "desk lamp"), (0.25, 0.25, 0.45), False, ("light",), ("light",),
      ("vase", "bottle")),
    K("candle", ("candle",), (0.07, 0.07, 0.15), False, ("light",), (), ("bottle", "cup")),
    K("guitar", ("guitar",), (0.4, 0.1, 1.0), False, ("music",), (), ("chair", "umbrella")),
    K("houseplant", ("plant", "houseplant", "pot plant"), (0.35, 0.35, 0.6), False, (), (), ("vase", "floor_lamp")),
    K("vase", ("vase",), (0.15, 0.15, 0.3), False, (), (), ("bottle", "cup")),
    K("umbrella", ("umbrella", "brolly"), (0.1, 0.1, 0.9), False, (), (), ("guitar", "coat_rack")),
    K("clock", ("clock",), (0.25, 0.08, 0.25), False, (), (), ("picture", "plate")),
    K("bowl", ("bowl",), (0.16, 0.16, 0.07), False, (), ("vessel",), ("plate", "cup")),
    K("plate", ("plate", "dish"), (0.25, 0.25, 0.02), False, (), (), ("bowl", "clock")),
    K("toothbrush", ("toothbrush",), (0.19, 0.02, 0.02), False, (), (), ("pen", "spoon")),
    K("hair_dryer", ("hair dryer", "hairdryer"), (0.25, 0.1, 0.25), False, ("dry",), ("appliance",),
      ("kettle", "bag")),
    K("kettle", ("kettle",), (0.22, 0.16, 0.25), False, ("cook",), ("appliance",), ("teapot", "vase")),
    K("toy", ("toy", "teddy bear"), (0.25, 0.2, 0.3), False, (), (), ("pillow", "bag")),
)
KIND_BY_LABEL = {kind.label: kind for kind in KINDS}

# Labels the mapper gives that are no kind above: what a confusion may point to.
EXTRA_LABELS = ("bottle", "box", "bag", "ball", "picture", "monitor", "oven", "tablet", "picture", "pot")


@dataclass(frozen=True)
class RoomKind:
    name: str
    names: tuple[str, ...]
    furniture: tuple[str, ...]          # labels of furniture it may hold, the first two always
    objects: tuple[str, ...]            # labels of things found there


ROOM_KINDS: tuple[RoomKind, ...] = (
    RoomKind("kitchen", ("kitchen",), ("counter", "refrigerator", "sink", "stove", "dining_table", "chair",
                                      "cabinet", "microwave", "dishwasher", "stool", "trash_can"),
             ("mug", "cup", "wine_glass", "water_bottle", "juice_carton", "milk_carton", "soda_can", "teapot",
              "apple", "banana", "orange", "pear", "bread", "cereal_box", "knife", "fork", "spoon", "bowl", "plate",
              "sponge", "paper_towels", "kettle", "sandwich")),
    RoomKind("living_room", ("living room", "lounge", "sitting room"),
             ("sofa", "coffee_table", "armchair", "tv_monitor", "bookcase", "side_table", "floor_lamp", "piano",
              "cabinet"),
             ("remote", "book", "magazine", "newspaper", "blanket", "pillow", "mug", "houseplant", "vase", "candle",
              "guitar", "soda_can", "tablet", "clock", "table_lamp")),
    RoomKind("bedroom", ("bedroom",), ("bed", "nightstand", "wardrobe", "dresser", "chair", "desk", "floor_lamp"),
             ("pillow", "blanket", "book", "table_lamp", "cell_phone", "sweater", "clock", "water_bottle",
              "pill_bottle", "toy", "laptop")),
    RoomKind("bathroom", ("bathroom",), ("sink", "toilet", "bathtub", "cabinet", "washing_machine", "stool"),
             ("towel", "soap", "toothbrush", "hair_dryer", "pill_bottle", "first_aid_kit", "sponge", "basket")),
    RoomKind("study", ("study", "office", "home office"), ("desk", "chair", "bookcase", "floor_lamp", "armchair",
                                                           "cabinet", "trash_can", "side_table"),
             ("laptop", "pen", "pencil", "notebook", "book", "scissors", "mug", "cell_phone", "table_lamp",
              "cardboard_box", "houseplant", "newspaper")),
    RoomKind("dining_room", ("dining room",), ("dining_table", "chair", "cabinet", "side_table", "bench"),
             ("plate", "bowl", "wine_glass", "fork", "knife", "spoon", "candle", "vase", "water_bottle", "bread",
              "orange", "juice_carton", "teapot")),
    RoomKind("hallway", ("hallway", "hall", "entrance"), ("coat_rack", "bench", "side_table", "cabinet",
                                                          "trash_can"),
             ("umbrella", "backpack", "cardboard_box", "basket", "cell_phone", "clock", "houseplant")),
    RoomKind("laundry", ("laundry room", "utility room"), ("washing_machine", "sink", "cabinet", "counter",
                                                           "trash_can"),
             ("basket", "towel", "sweater", "sponge", "paper_towels", "cardboard_box", "soap")),
    RoomKind("kids_room", ("children's room", "kids' room", "nursery"), ("bed", "desk", "chair", "bookcase",
                                                                         "dresser", "stool"),
             ("toy", "book", "pillow", "blanket", "pencil", "notebook", "backpack", "tablet", "apple")),
)
