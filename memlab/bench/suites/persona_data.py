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
