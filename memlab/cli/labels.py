"""``memlab labels sheet`` (a blind sheet of LoCoMo answers to label by hand) and ``memlab
labels judges`` (each judge against hand labels of a results folder's answers)."""

from __future__ import annotations

import argparse

from memlab.cli.common import RAW, non_negative_int, positive_int

DESCRIPTION = """\
Hand labels are what a LoCoMo judge is measured against (docs/suites.md).

sheet: draw a seeded sample of each condition's answered questions (categories 1-4) from the
LoCoMo runs under RESULTS whose answers are all recorded (complete, or still being judged), leave out the answers the --labels files already label, and
write them to --out (JSON lines: test_id, condition, question, gold, answer, and label and reason
empty). The sheet shows no judge's verdict. Fill in each line's label (CORRECT when the answer
states the gold fact, else WRONG) and a one-line reason; the filled sheet is a label file.

judges: put the judges' verdicts on RESULTS's answers beside the --labels files: agreement,
false accepts and false rejects with n and 95% Wilson intervals, and per condition the share of
its labelled answers right by hand and by each judge. Only labels of answers the runs gave
(the same test, condition and words) count; the command says how many that is.
"""


def register(commands) -> dict:
    labels = commands.add_parser(
        "labels", help="hand labels of LoCoMo answers: a blind sheet to fill, the judges "
                       "against the labels", description=DESCRIPTION, formatter_class=RAW,
        epilog="examples:\n"
               "  memlab labels sheet results/locomo --conditions oracle,rag --per-condition 50 "
               "--labels data/locomo_labels.jsonl --out sheet.jsonl\n"
               "  memlab labels judges results/locomo --labels data/locomo_labels.jsonl "
               "sheet.jsonl")
    sub = labels.add_subparsers(dest="labels_command", metavar="<command>", required=True)
    sheet = sub.add_parser("sheet", help="a blind sheet of answers to label",
                           description=DESCRIPTION, formatter_class=RAW)
    sheet.add_argument("results", help="a results folder with complete LoCoMo runs")
    sheet.add_argument("--conditions", required=True,
                       help="comma-separated conditions whose answers to draw")
    sheet.add_argument("--per-condition", type=positive_int, required=True,
                       help="answers drawn per condition (fewer when it has fewer unlabelled)")
    sheet.add_argument("--seed", type=non_negative_int, default=0, help="sample seed (default 0)")
    sheet.add_argument("--labels", nargs="*", default=[],
                       help="label files whose answers are left out")
    sheet.add_argument("--out", required=True, help="the sheet to write (a new file)")
    judges = sub.add_parser("judges", help="each judge against hand labels",
                            description=DESCRIPTION, formatter_class=RAW)
    judges.add_argument("results", help="a results folder with complete LoCoMo runs")
    judges.add_argument("--labels", nargs="+", required=True, help="filled label files")
    return {"labels": cmd_labels}


def cmd_labels(args: argparse.Namespace) -> int:
    import pandas as pd

    from memlab.report import judge_labels, label_sheet
    from memlab.report.literature import questions_frame

    labels = (pd.concat([judge_labels.read_labels(p) for p in args.labels], ignore_index=True)
              if args.labels else None)
    if args.labels_command == "sheet":
        conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
        sheet, available = label_sheet.label_sheet(label_sheet.answers_frame(args.results),
                                                   conditions, args.per_condition, args.seed,
                                                   labels)
        path = label_sheet.write_sheet(sheet, args.out)
        counts = ", ".join(f"{c} {min(args.per_condition, n)} of {n}"
                           for c, n in available.items())
        print(f"labels: wrote {len(sheet)} answers to label to {path} ({counts} unlabelled)")
        return 0
    questions = questions_frame(args.results, "locomo")
    matched = judge_labels.matching(labels, questions)
    print(f"labels: {len(matched)} of {len(labels)} labels are of answers these runs gave")
    table = judge_labels.judges_table(questions, labels)
    print(judge_labels.judges_shown(table).to_markdown(index=False))
    scored = judge_labels.labelled_scores(questions, labels)
    if len(scored):
        print()
        print(judge_labels.labelled_shown(scored).to_markdown(index=False))
    return 0
