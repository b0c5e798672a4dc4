"""The LLM judges of the published benchmarks, asked through memlab's LLM layer.

- ``mem0_judge``: Mem0's LoCoMo judge "J" (``evaluation/metrics/llm_judge.py`` of mem0ai/mem0):
  its CORRECT/WRONG prompt word for word, the label read from the JSON it asks for; Mem0's
  prompt asks to be "generous" (an answer that "touches on the same topic" is CORRECT);
- ``strict_judge``: memlab's strict LoCoMo judge, asked beside Mem0's on every answer: CORRECT
  only when the answer states the gold answer's fact (the same thing, the same date), its
  verdict constrained to the same JSON as Mem0's;
- ``matched_verdict``: the "matched" verdict on a LoCoMo answer, with no call of its own: the
  rule's (``judge_match.match_verdict``: absolute dates, dates just before an anchor, short
  facts) where a rule decides, else the strict judge's; it says which decided ("rule" or
  "judge");
- ``judge_answer``: the answer as the LoCoMo judges see it (a leading "Answer:" label and a
  time of day before a date dropped: gold answers never carry one);
- ``longmemeval_judge``: LongMemEval's per-question-type prompts (``get_anscheck_prompt`` in
  ``src/evaluation/evaluate_qa.py`` of xiaowu0162/LongMemEval) word for word, the abstention
  prompt for ``_abs`` questions, correct when the reply contains "yes" (as theirs reads it).

Every call goes through the client's response cache like any other model call, at temperature
0, so a re-run judges identically and pays nothing. The judge is the client it is given (the
run's answering model unless the caller passes another); its model name is recorded with
every verdict.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

from memlab.bench.suites.judge_match import match_verdict

MEM0_PROMPT = "\n".join([  # Mem0's prompt verbatim, trailing spaces included
    "",
    "Your task is to label an answer to a question as ’CORRECT’ or ’WRONG’. You will be given the following data:",
    "    (1) a question (posed by one user to another user), ",
    "    (2) a ’gold’ (ground truth) answer, ",
    "    (3) a generated answer",
    "which you will score as CORRECT/WRONG.",
    "",
    "The point of the question is to ask about something one user should know about the other user based on their prior conversations.",
    "The gold answer will usually be a concise and short answer that includes the referenced topic, for example:",
    "Question: Do you remember what I got the last time I went to Hawaii?",
    "Gold answer: A shell necklace",
    "The generated answer might be much longer, but you should be generous with your grading - as long as it touches on the same topic as the gold answer, it should be counted as CORRECT. ",
    "",
    'For time related questions, the gold answer will be a specific date, month, year, etc. The generated answer might be much longer or use relative time references (like "last Tuesday" or "next month"), but you should be generous with your grading - as long as it refers to the same date or time period as the gold answer, it should be counted as CORRECT. Even if the format differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it\'s the same date.',
    "",
    "Now it's time for the real question:",
    "Question: {question}",
    "Gold answer: {gold_answer}",
    "Generated answer: {generated_answer}",
    "",
    "First, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT or WRONG. ",
    "Do NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.",
    "",
    'Just return the label CORRECT or WRONG in a json format with the key as "label".',
    "",
])
MEM0_SCHEMA = {"type": "object", "properties": {"label": {"type": "string",
                                                          "enum": ["CORRECT", "WRONG"]}},
               "required": ["label"]}

STRICT_PROMPT = "\n".join([
    "Your task is to label an answer to a question as CORRECT or WRONG. You are given a "
    "question about a conversation, the gold (ground truth) answer and a generated answer.",
    "",
    "Label the generated answer CORRECT only if it states the fact the gold answer gives: the "
    "same person, thing, place, number or reason; for a time question the same date, month or "
    "year as the gold answer (another format is fine: \"7 May\" and \"May 7th\" are the same "
    "date). Extra words around the right fact are fine.",
    "Label it WRONG if it gives another fact, another date or a vaguer one (\"2023\" for "
    "\"May 2023\"), only some of the things a gold answer lists, a right and a wrong "
    "alternative together, or no answer (\"I don't know\", \"not mentioned\"). Being on the "
    "same topic is not enough.",
    "",
    "Question: {question}",
    "Gold answer: {gold_answer}",
    "Generated answer: {generated_answer}",
    "",
    'Return the label CORRECT or WRONG in a json format with the key as "label".',
])
_ANSWER_LABEL = re.compile(r"^\s*(short\s+)?answer\s*:\s*", re.IGNORECASE)
_TIME_OF_DAY = re.compile(r"\b\d{1,2}:\d{2}\s*[ap]\.?m\.?\s*(?:on\s+)?", re.IGNORECASE)

_CONTAINS = ("I will give you a question, a correct answer, and a response from a model. Please "
             "answer yes if the response contains the correct answer. Otherwise, answer no. ")
_STEPS = ("If the response is equivalent to the correct answer or contains all the intermediate "
          "steps to get the correct answer, you should also answer yes. If the response only "
          "contains a subset of the information required by the answer, answer no. ")
_TAIL = ("\n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model response "
         "correct? Answer yes or no only.")
LONGMEMEVAL_PROMPTS = {
    "single-session-user": _CONTAINS + _STEPS + _TAIL,
    "single-session-assistant": _CONTAINS + _STEPS + _TAIL,
    "multi-session": _CONTAINS + _STEPS + _TAIL,
    "temporal-reasoning": _CONTAINS + _STEPS + (
        "In addition, do not penalize off-by-one errors for the number of days. If the question "
        "asks for the number of days/weeks/months, etc., and the model makes off-by-one errors "
        "(e.g., predicting 19 days when the answer is 18), the model's response is still "
        "correct. ") + _TAIL,
    "knowledge-update": _CONTAINS + (
        "If the response contains some previous information along with an updated answer, the "
        "response should be considered as correct as long as the updated answer is the "
        "required answer.") + _TAIL,
    "single-session-preference": (
        "I will give you a question, a rubric for desired personalized response, and a response "
        "from a model. Please answer yes if the response satisfies the desired response. "
        "Otherwise, answer no. The model does not need to reflect all the points in the rubric. "
        "The response is correct as long as it recalls and utilizes the user's personal "
        "information correctly.\n\nQuestion: {}\n\nRubric: {}\n\nModel Response: {}\n\nIs the "
        "model response correct? Answer yes or no only."),
}
LONGMEMEVAL_ABSTENTION = (
    "I will give you an unanswerable question, an explanation, and a response from a model. "
    "Please answer yes if the model correctly identifies the question as unanswerable. The "
    "model could say that the information is incomplete, or some other information is given "
    "but the asked information is not.\n\nQuestion: {}\n\nExplanation: {}\n\nModel Response: "
    "{}\n\nDoes the model correctly identify the question as unanswerable? Answer yes or no "
    "only.")


class Verdict(BaseModel):
    """One judge's decision on one answer: ``correct``, the judge's raw reply, its model."""

    correct: bool
    raw: str
    model: str


def mem0_judge(client: Any, question: str, gold: str, answer: str) -> Verdict:
    """Mem0's J: CORRECT when the judge's label says so (its JSON, else the last label word)."""
    prompt = MEM0_PROMPT.format(question=question, gold_answer=gold, generated_answer=answer)
    reply = client.complete([{"role": "user", "content": prompt}], max_tokens=32,
                            json_schema=MEM0_SCHEMA).text
    return Verdict(correct=mem0_label(reply) == "CORRECT", raw=reply, model=client.model)


def strict_judge(client: Any, question: str, gold: str, answer: str) -> Verdict:
    """The strict judge: CORRECT only when the answer states the gold fact (``STRICT_PROMPT``),
    the label constrained to Mem0's JSON and read as Mem0's is."""
    prompt = STRICT_PROMPT.format(question=question, gold_answer=gold, generated_answer=answer)
    reply = client.complete([{"role": "user", "content": prompt}], max_tokens=32,
                            json_schema=MEM0_SCHEMA).text
    return Verdict(correct=mem0_label(reply) == "CORRECT", raw=reply, model=client.model)


def matched_verdict(gold: str, answer: str, strict: bool,
                    question: str | None = None) -> tuple[bool, str]:
    """The matched verdict on ``answer`` to ``question``: the rule's where one decides
    (``match_verdict``), else ``strict``, the strict judge's; with "rule" or "judge",
    whichever decided."""
    ruled = match_verdict(gold, answer, question)
    return (strict, "judge") if ruled is None else (ruled, "rule")


def judge_answer(reply: str) -> str:
    """The answer as the LoCoMo judges see it: stripped, without a leading "Answer:" /
    "Short answer:" label and without a time of day before a date ("1:56 pm on 8 May, 2023"
    -> "8 May, 2023": the prompt's dates carry the session's time, gold answers never do)."""
    return _TIME_OF_DAY.sub("", _ANSWER_LABEL.sub("", reply.strip())).strip()


def mem0_label(reply: str) -> str | None:
    """The label of a judge reply: its JSON ``label``, else the last CORRECT/WRONG in it."""
    try:
        label = json.loads(reply).get("label")
        if isinstance(label, str):
            return label.strip().upper()
    except (ValueError, AttributeError):
        pass
    words = re.findall(r"\b(CORRECT|WRONG)\b", reply.upper())
    return words[-1] if words else None


def longmemeval_prompt(question_type: str, question: str, answer: str, response: str,
                       abstention: bool) -> str:
    """LongMemEval's judge prompt for one answer (KeyError: a type it has no prompt for)."""
    template = LONGMEMEVAL_ABSTENTION if abstention else LONGMEMEVAL_PROMPTS[question_type]
    return template.format(question, answer, response)


def longmemeval_judge(client: Any, question_type: str, question: str, answer: str,
                      response: str, abstention: bool) -> Verdict:
    """LongMemEval's verdict: correct when the judge's reply contains "yes"."""
    prompt = longmemeval_prompt(question_type, question, answer, response, abstention)
    reply = client.complete([{"role": "user", "content": prompt}], max_tokens=10,
                            choices=["yes", "no"]).text
    return Verdict(correct="yes" in reply.lower(), raw=reply, model=client.model)
