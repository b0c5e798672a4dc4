"""Seeded generators of our own for the LTM test types, in GoodAI's definition shape.

Each generator returns a :class:`~memlab.bench.goodai.TestDefinition` (script, is_question,
waits spread evenly up to 90% of the span, expected_responses) with ``reset_message`` and any
scorer context as extra fields. All vocabularies are memlab's own.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from memlab.bench.goodai import TestDefinition

COLOURS = ("Crimson Amber Teal Olive Lilac Navy Coral Ivory Maroon Turquoise Mustard Indigo "
           "Peach Charcoal Mint").split()
COLOUR_LINES = ("My favourite colour is {x}.", "These days {x} is the colour I like best.",
                "If you ask me for my favourite colour, it is {x}.", "I now prefer {x} to any other colour.")
ITEMS = ("Apples Rice Yoghurt Onion Pasta Butter Lemon Tea Sponge Shampoo Batteries Flour").split()
ADD_LINES = ("Put {n} {x} on my shopping list, please.", "Add {mod}{n} {x} to the list.",
             "I need {mod}{n} {x}; please note it on my list.")
REMOVE_LINES = ("Take {n} {x} off my shopping list.", "Please remove {n} {x} from the list.")
NAMES = ("Aurelio Brigid Caspian Delphine Emrys Fenella Gideon Honora Ignatius Juno Kasimir "
         "Linnea Mordecai Nerys Orson Philippa Quillon Rosalind Silvan Tamsin").split()
NAME_LINES = ("Please call me {x} from now on.", "My name is {x}.", "You can address me as {x}.",
              "I go by {x} now.", "{x} is the name I use these days.")
PLACES = ("Bakery", "Clock Tower", "Fountain", "Library", "Museum", "Old Mill", "Post Office",
          "Railway Bridge", "Stadium", "Town Hall", "Water Tower", "Chapel")
DIRECTIONS = ("North", "South", "East", "West")
JOKES = (
    "My calendar and I broke up: it said my days were numbered.",
    "I told my plant a joke, but it just stayed rooted to the spot.",
    "The stapler and I get along; we really are attached to each other.",
    "My socks went missing in the wash, so now I only trust the dryer partially.",
    "I bought a ladder for my bookshelf; the books have reached new heights.",
    "The broom was late again. It said it swept in as fast as it could.",
    "My umbrella retired early; it said it had been under a lot of pressure.",
    "The kettle and the toaster held a meeting. It was a heated discussion.",
    "I named my bicycle Patience, because it is always two-tired.",
)
QUOTES = (
    ("A map is only as brave as the walker who unfolds it.", "Orla Penhallow"),
    ("Small lanterns outlast the loudest fireworks.", "Teodor Vasquez-Lind"),
    ("Every harbour was once just a stubborn stretch of coast.", "Mirela Okonjo"),
    ("Patience is a garden that grows in the dark.", "Henrik Albescu"),
    ("The quietest clock still keeps the hour.", "Sunniva Achterberg"),
)
TRIGGERS = (
    ("tell you that I am cold", "Put on a warm jumper and make some cocoa", "Brr, I am freezing."),
    ("mention that I lost my keys", "Check the bowl by the front door", "I lost my keys again."),
    ("say that I am bored", "Time to learn a new card trick", "I am so bored right now."),
    ("complain about the rain", "Rainy days are perfect for reading", "Ugh, it is raining again."),
    ("ask what to cook tonight", "How about a vegetable omelette", "What should I cook tonight?"),
)
SPY_TIME = (("when the owls start calling", ["night", "midnight"]),
            ("when the bakers light their ovens", ["dawn", "early morning", "sunrise"]),
            ("when the shadows are shortest", ["noon", "midday"]))
SPY_PLACE = (("where the ships are mended", ["shipyard", "dock", "harbour"]),
             ("where the books sleep", ["library", "archive"]),
             ("where the bread is made", ["bakery"]))
SPY_THING = (("a way to see in the dark", ["torch", "flashlight", "lantern"]),
             ("a way to speak across the city", ["radio", "phone", "walkie"]),
             ("a way to hide your face", ["mask", "disguise", "hood"]))
SPY_VOCABULARY = sorted({k for table in (SPY_TIME, SPY_PLACE, SPY_THING) for _, ks in table for k in ks})
SPY_AGENTS = ("Agent Marlow", "Ms. Ilse Varga", "Dr. Piet Sondergaard", "Captain Ruth Amadi",
              "Mr. Levan Kipiani", "Professor Ana Quiroga")
ROOMS = ("kitchen", "garage", "study", "hallway", "cellar", "porch")
CONTAINERS = ("basket", "drawer", "suitcase", "cupboard", "crate", "envelope", "box", "tin")
OBJECTS = ("scarf", "compass", "harmonica", "notebook", "teapot", "glove")
PEOPLE = ("Mira", "Tobias", "Keira", "Anselm", "Noor", "Bastien")


def even_waits(n_lines: int, time: Callable[[], float] | None = None) -> list[dict[str, Any]]:
    """Waits of ``n_lines`` lines: line i waits until 90% * (i+1)/(n-1) of the span."""
    waits = []
    for i in range(n_lines - 1):
        wait: dict[str, Any] = {"percentage_finished": round(90 * (i + 1) / (n_lines - 1), 4)}
        if time is not None:
            wait["time"] = time()
        waits.append(wait)
    return waits + [{}]


def _definition(script: list[str], expected: list[Any], n_questions: int = 1, **extra: Any):
    is_question = [False] * (len(script) - n_questions) + [True] * n_questions
    return TestDefinition(script=script, is_question=is_question, waits=even_waits(len(script)),
                          expected_responses=expected, **extra)


def colours(rng: random.Random, colour_changes: int = 3) -> TestDefinition:
    picks = [rng.choice(COLOURS) for _ in range(colour_changes)]
    script = [rng.choice(COLOUR_LINES).format(x=c) for c in picks] + ["What is my favourite colour?"]
    return _definition(script, [picks[-1]])


def shopping(rng: random.Random, item_changes: int = 6) -> TestDefinition:
    cart: dict[str, int] = {}
    script = []
    for _ in range(item_changes):
        if cart and rng.random() < 0.2:
            item = rng.choice(sorted(cart))
            n = rng.randint(1, cart[item])
            cart[item] -= n
            if not cart[item]:
                del cart[item]
            script.append(rng.choice(REMOVE_LINES).format(n=n, x=item))
            continue
        item, n = rng.choice(ITEMS), rng.randint(1, 3)
        mod = "another " if item in cart else ""
        cart[item] = cart.get(item, 0) + n
        script.append(rng.choice(ADD_LINES).format(n=n, x=item, mod=mod))
    script.append("What is on my shopping list now? Answer with a JSON list of objects with "
                  "`item` and `quantity` properties only, merging repeated items.")
    return _definition(script, [[k.lower(), v] for k, v in cart.items()],
                       reset_message="I bought everything; please clear my shopping list.")


def name_list(rng: random.Random, name_changes: int = 5) -> TestDefinition:
    names = rng.sample(NAMES, name_changes)
    script = [rng.choice(NAME_LINES).format(x=n) for n in names]
    script.append("Which names have I asked you to call me so far? Answer as a JSON list.")
    return _definition(script, names, reset_message=(
        "Forget every name I have given you before this message; you do not know my name now."))


def locations_directions(rng: random.Random, known_locations: int = 6) -> TestDefinition:
    places = rng.sample(PLACES, known_locations)
    script = [f"The {places[0]} stands in the middle of my home town."]
    steps = []
    for prev, here in zip(places, places[1:], strict=False):
        km, way = rng.randint(1, 5), rng.choice(DIRECTIONS)
        steps.append(f"From {prev}, go {km}km {way} to {here}.")
        script.append(f"The {here} is {km} km {way} of the {prev}.")
    script.append(f"Using the places I described, how do I get from the {places[0]} to the "
                  f"{places[-1]} passing by each of them?")
    return _definition(script, ["\n".join(steps)],
                       reset_message="Forget the places of my home town I told you about.")


def jokes(rng: random.Random, jokes_told: int = 4) -> TestDefinition:
    told = rng.sample(JOKES, jokes_told)
    waits = even_waits(jokes_told + 1, time=lambda: rng.randint(30, 240) * 60)
    return TestDefinition(script=list(told), is_question=[False] * jokes_told + [True],
                          waits=waits, expected_responses=[rng.choice(told)], is_temporal=True)


def sallyanne(rng: random.Random) -> TestDefinition:
    a, b = rng.sample(PEOPLE, 2)
    room, other = rng.sample(ROOMS, 2)
    first, second = rng.sample(CONTAINERS, 2)
    thing = rng.choice(OBJECTS)
    leaves = rng.random() < 0.75  # false belief in most stories
    story = [f"{a} walked into the {room}.", f"{b} walked into the {room}.",
             f"The {thing} is in the {first}."]
    story.append(f"{b} left the {room}." if leaves else f"{b} sat down in the {room}.")
    story += [f"{a} put the {thing} into the {second}.", f"{a} hums a little tune.",
              f"{b} went to the {other}." if leaves else f"{b} watched {a} closely."]
    script = ["I will narrate a short radio play, line by line; at the end I will ask you a "
              "question about it. Ready?"] + [f"(Radio) {line}" for line in story]
    script.append(f"The play is over. Where will {b} look for the {thing} first?\nAnswer in JSON "
                  'with one word, like this: {"answer": "word"}')
    return _definition(script, [first if leaves else second])


def _ordinal(n: int) -> str:
    return f"{n}{'tsnrhtdd'[(n // 10 % 10 != 1) * (n % 10 < 4) * n % 10::4]}"


def prospective_memory(rng: random.Random) -> TestDefinition:
    quote, author = rng.choice(QUOTES)
    n = rng.randint(2, 5)
    script = [f"'{quote}' - {author}",
              f"After answering my next, unrelated messages, please append the quote from "
              f"{author} to your {_ordinal(n)} reply. Count your reply to this message as the first."]
    return _definition(script, [[quote, author, n]], uses_callback=True,
                       reset_message="Forget my request to append a quote to one of your replies.")


def trigger_response(rng: random.Random, activations: int = 3) -> TestDefinition:
    request, sentence, trigger = rng.choice(TRIGGERS)
    script = [f"Whenever I {request}, reply: '{sentence}'"] + [trigger] * activations
    return _definition(script, [sentence] * activations, n_questions=activations, reset_message=(
        "Cancel every instruction about a sentence to say when I do something."))


def spy_meeting(rng: random.Random) -> TestDefinition:
    agents = rng.sample(SPY_AGENTS, 3)
    topics = [("The meeting time is {}.", SPY_TIME), ("We meet {}.", SPY_PLACE),
              ("Bring along {}.", SPY_THING)]
    rng.shuffle(topics)
    script = [f"You will receive three coded messages, from {', '.join(agents[:2])} and {agents[2]}."]
    expected = []
    for agent, (template, table) in zip(agents, topics, strict=False):
        code, keywords = rng.choice(table)
        script.append(f"{agent}: {template.format(code)}")
        expected.append(keywords)
    script.append("Decode the messages you received: tell me as precisely as you can when and "
                  "where the meeting is and what you should bring.")
    return _definition(script, expected, spy_vocabulary=SPY_VOCABULARY)


GENERATORS: dict[str, Callable[..., TestDefinition]] = {
    "colours": colours, "shopping": shopping, "name_list": name_list,
    "locations_directions": locations_directions, "jokes": jokes, "sallyanne": sallyanne,
    "prospective_memory": prospective_memory, "trigger_response": trigger_response,
    "spy_meeting": spy_meeting,
}
# GoodAI's per-type arguments in the v3 configuration
DEFAULT_ARGS: dict[str, dict[str, Any]] = {
    "colours": {"colour_changes": 3}, "shopping": {"item_changes": 6},
    "locations_directions": {"known_locations": 6}, "name_list": {"name_changes": 5},
    "jokes": {"jokes_told": 4},
}
