"""Vocabulary of memlab's own for the generated Persona suite (no outside corpus)."""

from __future__ import annotations

FIRST_NAMES = ("Ilona", "Rafael", "Sunita", "Oskar", "Mariam", "Declan", "Yuki", "Teodora",
               "Kwame", "Lucia", "Anders", "Priya")
LAST_NAMES = ("Marsh", "Okafor", "Lindqvist", "Bernal", "Haddad", "Novak", "Castell", "Iwata")
JOBS = ("a nurse", "a bus driver", "a data analyst", "a carpenter", "a teacher", "a pharmacist",
        "a translator", "a sound engineer")
CITIES = ("Porto", "Tampere", "Ghent", "Valparaiso", "Cork", "Ljubljana")

# topic -> items, why one may like / dislike them, shareable facts, a new scenario, chit-chat
TOPICS: dict[str, dict[str, tuple[str, ...]]] = {
    "cooking": {
        "items": ("spicy curries", "sourdough baking", "fermented vegetables", "slow-cooked stews",
                  "raw food dishes", "grilled fish"),
        "like": ("it makes weeknights feel special", "the flavours are bold and warming",
                 "it is calming to prepare", "my family asks for seconds"),
        "dislike": ("it takes far too long to prepare", "the smell lingers for days",
                    "it upsets my stomach", "the results were disappointing every time"),
        "facts": ("took a knife-skills class at the community kitchen",
                  "won second prize in a neighbourhood chili contest",
                  "inherited my grandmother's cast-iron pan"),
        "scenario": "hosting a dinner for new colleagues",
    },
    "travel": {
        "items": ("night trains", "camping trips", "city breaks", "beach resorts",
                  "hiking holidays", "cruise ships"),
        "like": ("I love waking up somewhere new", "it feels like a real adventure",
                 "it is easy on my budget", "I meet interesting people"),
        "dislike": ("I never sleep well there", "it felt crowded and rushed",
                    "it became too expensive", "the weather ruined it twice"),
        "facts": ("got lost for a whole afternoon in a medieval market",
                  "learned to say thank you in nine languages",
                  "once missed a ferry by two minutes"),
        "scenario": "planning a long weekend with my sister",
    },
    "music": {
        "items": ("jazz records", "live folk concerts", "electronic dance music", "choir singing",
                  "opera evenings", "guitar lessons"),
        "like": ("it lifts my mood instantly", "it helps me focus at work",
                 "it connects me with friends", "it reminds me of my childhood"),
        "dislike": ("it gives me a headache", "it started to feel repetitive",
                    "the venues are too loud", "I never find time for it"),
        "facts": ("played the tuba in my school band", "met my best friend at a record fair",
                  "wrote a song for my parents' anniversary"),
        "scenario": "choosing background music for a long drive",
    },
    "fitness": {
        "items": ("morning runs", "yoga classes", "weight training", "swimming laps",
                  "cycling to work", "team football"),
        "like": ("it clears my head", "I sleep much better afterwards",
                 "it gives me energy for the day", "I enjoy tracking my progress"),
        "dislike": ("it hurt my knees", "it feels like a chore",
                    "the gym is always packed", "it eats into my evenings"),
        "facts": ("finished a ten-kilometre charity run", "broke my wrist skating as a teenager",
                  "keep a training diary since last spring"),
        "scenario": "picking an activity for a team-building day",
    },
    "reading": {
        "items": ("crime novels", "poetry collections", "science magazines", "fantasy sagas",
                  "biographies", "audiobooks"),
        "like": ("it helps me unwind before bed", "I learn something every time",
                 "the stories stay with me for weeks", "it fits into my commute"),
        "dislike": ("it started to feel predictable", "I lose track of the plot",
                    "it strains my eyes", "it feels too heavy after work"),
        "facts": ("run a small book swap at the library", "read a novel in one night once",
                  "have a shelf of signed first editions"),
        "scenario": "choosing a present for a friend's birthday",
    },
}
CHAT = (("I had a pretty ordinary day, to be honest.", "Ordinary days can be restful too."),
        ("Do you think it will rain this weekend?", "I can't see a forecast, but it's worth checking one."),
        ("I spent the morning tidying up my desk.", "A tidy desk can make a real difference."),
        ("I'm thinking about rearranging my living room.", "Moving furniture can make a room feel new."),
        ("My neighbour's cat visited me again today.", "It sounds like you have a regular guest."),
        ("I need to remember to call the dentist.", "Maybe set a reminder on your phone."),
        ("Work was busy but manageable.", "Glad it stayed manageable."),
        ("I tried a new route to the shops today.", "New routes can be surprisingly interesting."))
OFF_TOPIC = (("Quick question: how many centimetres are in a metre?", "There are 100 centimetres in a metre."),
             ("What's the plural of 'cactus'?", "Both 'cacti' and 'cactuses' are used."),
             ("Can you remind me what 15 times 4 is?", "15 times 4 is 60."),
             ("Which is bigger, a kilobyte or a megabyte?", "A megabyte is bigger."),
             ("How many days does February have in a leap year?", "29 days."))
TOPIC_CHAT = ("Let's talk about {topic} again.", "I've been thinking about {topic} lately.",
              "Something about {topic} came up today.", "Can we chat about {topic} for a bit?")
ASSISTANT_ACK = ("Thanks for telling me about that.", "That's good to know.",
                 "I'll keep that in mind.", "Interesting, tell me more if you like.")

# ``chat="varied"``: small talk composed from parts (errands, people, weather, plans): 1,088
# distinct user sentences where CHAT has 8, none naming a topic's items or reasons.
# PersonaMem's histories are varied conversation; CHAT repeated at 32k is 1,771 turns of 58
# sentences, which a retriever never confuses with a preference and a compression copies.
DAY_PARTS = ("This morning", "Earlier today", "Last night", "Yesterday evening", "Over lunch",
             "On the way home", "Before work", "This afternoon")
ERRANDS = ("I fixed the wobbly leg of the kitchen table", "I returned a parcel at the post office",
           "I finally replaced the hallway light bulb", "I sorted the recycling",
           "I watered the balcony plants", "I ironed a pile of shirts", "I defrosted the freezer",
           "I paid the electricity bill", "I picked up a prescription",
           "I scrubbed the bathroom tiles", "I swapped the winter duvet for a lighter one",
           "I oiled the squeaky door hinge", "I sewed a button back on my coat",
           "I emptied the dishwasher", "I tidied the shoe rack", "I took the car through a wash")
AFTERWARDS = ("and it felt good to tick it off", "which took longer than I expected",
              "so that's one thing less to worry about", "though I nearly forgot",
              "and now I'm a bit tired", "and it was oddly satisfying")
ERRAND_REPLIES = ("Nice to get that done.", "Those small jobs add up.",
                  "Sounds like a productive day.", "That's the kind of job that's easy to put off.")
PEOPLE = ("My sister", "A colleague", "My upstairs neighbour", "An old school friend",
          "My landlord", "The postman", "My cousin", "A friend from work")
PEOPLE_DID = ("called to ask how I was doing", "sent me a photo of a new kitchen",
              "asked me to keep an eye on the flat next week", "dropped off a spare key",
              "told me a long story about a delayed bus", "lent me an umbrella",
              "asked for help moving a sofa", "asked whether I could lend a drill")
PAST = ("today", "yesterday", "this morning", "last night")
PEOPLE_REPLIES = ("It's nice when people stay in touch.", "That sounds thoughtful.",
                  "How did that go?", "People can surprise you.")
WEATHER = ("It was windy all day here", "The heating came on for the first time this season",
           "It drizzled the whole afternoon", "The sun finally came out after lunch",
           "There was frost on the car windows", "It got dark really early today")
SO = ("so I stayed in", "so I wore my thickest coat", "so I took the bus instead of walking",
      "so I opened all the windows")
WEATHER_REPLIES = ("Weather like that changes the whole day.", "Sounds like a sensible choice.",
                   "Hopefully tomorrow is calmer.")
CHORES = ("I need to book a haircut", "I should renew my parking permit",
          "I want to clear out the garage", "I have to reply to a pile of emails",
          "I'm meaning to back up my phone", "I ought to call the bank about a card",
          "I must defrost the freezer again", "I should fix the dripping tap")
WHEN_NEXT = ("this week", "before Friday", "at some point soon", "tomorrow morning",
             "over the weekend")
CHORE_REPLIES = ("A reminder might help.", "Good idea to get it out of the way.",
                 "One step at a time.")


def varied_chat(rng) -> tuple[str, str]:
    """One small-talk exchange (user, reply) of ``chat="varied"``, drawn with ``rng``: each of
    the 1,088 sentences about equally likely (a kind is drawn by how many sentences it makes)."""
    pick = rng.randrange(_VARIED_SENTENCES)
    if pick < _KIND_SIZES[0]:
        return (f"{rng.choice(DAY_PARTS)} {rng.choice(ERRANDS)}, {rng.choice(AFTERWARDS)}.",
                rng.choice(ERRAND_REPLIES))
    if pick < sum(_KIND_SIZES[:2]):
        return (f"{rng.choice(PEOPLE)} {rng.choice(PEOPLE_DID)} {rng.choice(PAST)}.",
                rng.choice(PEOPLE_REPLIES))
    if pick < sum(_KIND_SIZES[:3]):
        return f"{rng.choice(WEATHER)}, {rng.choice(SO)}.", rng.choice(WEATHER_REPLIES)
    return f"{rng.choice(CHORES)} {rng.choice(WHEN_NEXT)}.", rng.choice(CHORE_REPLIES)


_KIND_SIZES = (len(DAY_PARTS) * len(ERRANDS) * len(AFTERWARDS), len(PEOPLE) * len(PEOPLE_DID)
               * len(PAST), len(WEATHER) * len(SO), len(CHORES) * len(WHEN_NEXT))
_VARIED_SENTENCES = sum(_KIND_SIZES)  # 1,088
