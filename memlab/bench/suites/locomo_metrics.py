"""LoCoMo's answer metrics, computed the way its paper's evaluation code computes them.

Followed from snap-research/locomo ``task_eval/evaluation.py``:

- ``normalise_answer``: commas removed, lower case, punctuation removed, the words a / an /
  the / and removed, whitespace collapsed (their ``normalize_answer``);
- ``token_f1``: F1 of the Porter-stemmed normalised tokens (their ``f1_score``);
- ``locomo_f1``: per category as their ``eval_question_answering``: multi-hop (1) splits
  prediction and gold answer at commas and averages, over the gold parts, the best F1 of any
  predicted part; open-domain (3) scores against the gold answer's first ``;`` part; temporal
  (2) and single-hop (4) are ``token_f1``;
- ``declines``: adversarial questions (5) score 1 when the answer says the information is not
  there ("no information available" / "not mentioned"), else 0.

BLEU-1 (which Mem0's table reports beside F1) is the sentence BLEU of unigrams with NLTK's
smoothing method 1, as Mem0's ``metrics/utils.py`` computes it, here on the same normalised
tokens as F1 (without stemming) instead of NLTK's punkt tokenizer, which needs a download.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import lru_cache

CATEGORIES = {1: "multi_hop", 2: "temporal", 3: "open_domain", 4: "single_hop", 5: "adversarial"}
DECLINED = ("no information available", "not mentioned")
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalise_answer(text: str) -> str:
    """LoCoMo's answer normalisation (see the module docstring)."""
    text = str(text).replace(",", "").lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


@lru_cache(maxsize=1)
def _stemmer():
    from nltk.stem import PorterStemmer

    return PorterStemmer()


def _stems(text: str) -> list[str]:
    stem = _stemmer().stem
    return [stem(word) for word in normalise_answer(text).split()]


def token_f1(prediction: str, gold: str) -> float:
    """F1 of the stemmed normalised tokens of ``prediction`` against ``gold``."""
    predicted, wanted = _stems(prediction), _stems(gold)
    same = sum((Counter(predicted) & Counter(wanted)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(wanted)
    return 2 * precision * recall / (precision + recall)


def locomo_f1(prediction: str, gold: str, category: int) -> float:
    """The F1 LoCoMo reports for a question of ``category`` (1-4)."""
    gold = str(gold)
    if category == 1:
        predicted = [p.strip() for p in prediction.split(",")]
        parts = [g.strip() for g in gold.split(",")]
        return sum(max(token_f1(p, g) for p in predicted) for g in parts) / len(parts)
    if category == 3:
        gold = gold.split(";")[0].strip()
    return token_f1(prediction, gold)


def bleu1(prediction: str, gold: str) -> float:
    """Sentence BLEU-1 of the normalised tokens (smoothing method 1); 0 for an empty side."""
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    hypothesis, reference = normalise_answer(prediction).split(), normalise_answer(gold).split()
    if not hypothesis or not reference:
        return 0.0
    return float(sentence_bleu([reference], hypothesis, weights=(1, 0, 0, 0),
                               smoothing_function=SmoothingFunction().method1))


def declines(answer: str) -> bool:
    """Whether ``answer`` says the conversation does not hold the information (category 5)."""
    lowered = answer.lower()
    return any(phrase in lowered for phrase in DECLINED)
