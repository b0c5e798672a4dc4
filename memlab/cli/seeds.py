"""``memlab docqa`` (seed 001), ``memlab decide`` (seed 003), ``memlab taskforce`` (seed 004)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memlab.cli.common import RAW, OneLineParser, add_model_options, positive_int
from memlab.errors import ConfigError, MemlabError, fields_message
from memlab.userfiles import writable_folder

DOCQA_HELP = """\
Document question answering (seed 001). `ingest` splits .txt/.md files into chunks (pages from
markers like `--- page 2 ---`), embeds them and stores them in --workdir; `ask` retrieves the
closest chunks and has the model answer from them, citing file and page. The query moves
PENDING -> PROCESSING -> COMPLETED (exit 0) or FAILED (exit 1, with the reason).
"""
DOCQA_EXAMPLES = """\
examples:
  memlab docqa ingest data/docqa
  memlab docqa ask "Which sensors keep a humanoid balanced?"
  memlab docqa ask "Where is the first one mounted?" --session s1   (follows the conversation)
"""
DECIDE_HELP = """\
The prioritisation debate (seed 003): three advisors built from the student's core values and
a Director debate three rounds of 13 turns (criteria, AHP pairwise comparisons, decision
matrix); round 4 ranks the majors by TOPSIS. INPUT.json is a UserInput (see
data/decision/sample_input.json). Writes round{1,2,3}_test_<session>.json and
final_ranking_<session>.json into --out and prints one line per turn (the whole turn with
--stream or settings.enable_streaming). A run stopped after a round resumes with the same
--session-id. Round 2: a consistency ratio above settings.cr_threshold is re-asked (the least
consistent pairs) up to settings.cr_max_retries times; still above, the Director's matrix is
repaired toward what its other judgements imply, recorded as cr_repair in the round 2 file
(--strict-cr, or MEMLAB_DECISION_CR_REPAIR=0: stop instead).
"""
TASKFORCE_HELP = """\
The Taskforce ReAct agent (seed 004): plans a mission into steps, then thinks and calls one
tool per step (calculator, python, file_read / file_write in <workdir>/workspace,
search_documents over documents ingested with `memlab docqa ingest`, ask_user, finish).
Every step is saved; a session that was killed resumes with `memlab taskforce resume ID`.
Use --llm-model 1.5b: it solved 8 of 10 held-out missions, the default 0.5B 3 of 10
(benchmarks/results/taskforce*.json).
"""


def register(commands) -> dict:
    _add_docqa(commands)
    _add_decide(commands)
    _add_taskforce(commands)
    return {"docqa": cmd_docqa, "decide": cmd_decide, "taskforce": cmd_taskforce}


def _add_docqa(commands) -> None:
    docqa = commands.add_parser("docqa", help="ask questions about your documents (seed 001)",
                                description=DOCQA_HELP, epilog=DOCQA_EXAMPLES,
                                formatter_class=RAW)
    actions = docqa.add_subparsers(dest="docqa_command", metavar="<ingest|ask>", required=True,
                                   parser_class=OneLineParser)
    ingest = actions.add_parser("ingest", help="chunk, embed and store .txt/.md documents",
                                epilog="example: memlab docqa ingest data/docqa")
    ingest.add_argument("path", help="a .txt/.md file or a folder of them")
    ask = actions.add_parser("ask", help="answer a question from the ingested documents",
                             epilog='example: memlab docqa ask "How do humanoids balance?"')
    ask.add_argument("question", help="1-1000 characters")
    ask.add_argument("--session", default=None, help="conversation id: earlier questions of "
                     "the session are context")
    ask.add_argument("--user", default=None, help="user id recorded on the query")
    ask.add_argument("-k", type=positive_int, default=4, help="chunks retrieved (default 4)")
    for sub in (ingest, ask):
        sub.add_argument("--workdir", default="results/docqa",
                         help="folder of the chunk store (default results/docqa)")
        sub.add_argument("--collection", default="book", help="collection name (default book)")
        add_model_options(sub)


def _add_decide(commands) -> None:
    decide = commands.add_parser("decide", help="debate and rank candidate majors (seed 003)",
                                 description=DECIDE_HELP, formatter_class=RAW,
                                 epilog="example: memlab decide data/decision/sample_input.json"
                                        " --llm-model 1.5b")
    decide.add_argument("input", metavar="INPUT.json", help="the UserInput file")
    decide.add_argument("--out", default="results/decision", help="folder of the round files")
    decide.add_argument("--session-id", default=None, help="resume (or name) a debate")
    decide.add_argument("--stream", action="store_true", help="print every turn in full")
    decide.add_argument("--strict-cr", action="store_true",
                        help="stop when CR stays above cr_threshold (no repair)")
    add_model_options(decide)


def _add_taskforce(commands) -> None:
    taskforce = commands.add_parser("taskforce", help="run a mission with the ReAct agent "
                                    "(seed 004)", description=TASKFORCE_HELP, formatter_class=RAW)
    tasks = taskforce.add_subparsers(dest="taskforce_command", metavar="<run|resume>",
                                     required=True, parser_class=OneLineParser)
    run = tasks.add_parser("run", help="run a new mission",
                           epilog='example: memlab taskforce run "Compute 12 * 3, then add 6" '
                                  '--llm-model 1.5b')
    run.add_argument("mission", help="what the agent should do")
    run.add_argument("--user", default=None, help="user id (lessons are kept per user)")
    run.add_argument("--profile", default="dev", choices=["dev", "staging", "prod"],
                     help="configuration profile (default dev)")
    resume = tasks.add_parser("resume", help="finish a session that was stopped",
                              epilog="example: memlab taskforce resume 6f1c...")
    resume.add_argument("session_id")
    for sub in (run, resume):
        sub.add_argument("--workdir", default="results/taskforce",
                         help="folder of the session store and the workspace")
        sub.add_argument("--docs", default="results/docqa",
                         help="docqa workdir searched by search_documents (default "
                              "results/docqa; when empty, the workspace's files are searched)")
        sub.add_argument("--max-steps", type=positive_int, default=4,
                         help="ReAct steps per plan item (default 4)")
        add_model_options(sub)


# --- docqa --------------------------------------------------------------------------------------
def cmd_docqa(args: argparse.Namespace) -> int:
    from memlab import lab
    from memlab.docqa.ingest import read_documents
    from memlab.models.retrieval import Query

    writable_folder(args.workdir, "--workdir")  # a file there is the user's mistake: exit 2
    embedder = lab.make_embedder(args.embedder)
    if args.docqa_command == "ingest":
        read_documents(args.path)  # an unreadable document: exit 2 before the store is opened
        qa = lab.make_docqa(args.workdir, embedder=embedder, collection=args.collection)
        report = qa.ingest(args.path)
        print(f"ingested {len(report.documents)} document(s), {len(report.chunks)} chunks "
              f"({report.dimension}-dim embeddings) into {args.workdir} (collection "
              f"{args.collection!r}; {qa.store.count()} chunks in all)")
        return 0
    try:  # checked before a model loads
        query = Query(text=args.question, user_id=args.user, session_id=args.session)
    except ValidationError as exc:
        raise ConfigError(f"question: {fields_message(exc.errors())}") from None
    qa = lab.make_docqa(args.workdir, llm=lab.make_llm(args.llm, args.llm_model),
                        embedder=embedder, collection=args.collection, k=args.k)
    result = qa.ask(query)
    print(format_query_result(result))
    return 0 if result.response is not None else 1


def format_query_result(result: Any) -> str:
    """The answer, its sources, the status and the chunks behind it, for a terminal."""
    query = result.query
    if result.response is None:
        return f"status: {query.status.value} (query {query.id})\nerror: {result.error}"
    response = result.response
    lines = [response.content, "", f"sources: {'; '.join(response.sources)}",
             f"status: {query.status.value}  confidence: {response.confidence:.2f}  "
             f"re-asks: {result.reasks}  (query {query.id})", "retrieved:"]
    for chunk in response.retrieved_chunks:
        page = f" p.{chunk.page_number}" if chunk.page_number is not None else ""
        text = " ".join(chunk.content.split())[:90]
        lines.append(f"  {chunk.similarity_score:.2f}  {chunk.source_document}{page}  {text}")
    return "\n".join(lines)


# --- decide -------------------------------------------------------------------------------------
def cmd_decide(args: argparse.Namespace) -> int:
    from memlab import lab
    from memlab.decision.debate import InconsistentJudgementsError
    from memlab.decision.outputs import final_ranking_filename, read_user_input

    user = read_user_input(args.input)  # bad input: exit 2 before any model loads
    writable_folder(args.out, "--out")
    full = args.stream or user.settings.enable_streaming
    llm = lab.make_llm(args.llm, args.llm_model)
    print(f"debate: {len(user.candidate_majors)} majors, {user.settings.max_criteria} criteria, "
          f"model {llm.model}; files in {args.out}", flush=True)

    def on_turn(round_no, turn, info) -> None:
        print(format_turn(round_no, turn, info, full=full), flush=True)

    try:
        state = lab.decide(args.input, args.out, llm=llm, session_id=args.session_id,
                           on_turn=on_turn, cr_repair=False if args.strict_cr else None)
    except InconsistentJudgementsError as exc:
        raise MemlabError(f"{exc}; the round 1 file is kept: rerun with the same --session-id "
                          "to resume at round 2") from None
    print("\nfinal ranking (TOPSIS):")
    for result in state.final_ranking:
        print(f"  {result.rank}. {result.alternative:<24} closeness "
              f"{result.closeness_coefficient:.3f}")
    weights = ", ".join(f"{c} {w:.3f}" for c, w in state.criteria_weights.items())
    print(f"criteria weights (AHP, CR {state.consistency_ratio:.3f}): {weights}")
    repair = state.round2_director_decision.cr_repair if state.round2_director_decision else None
    if repair is not None:
        print(format_repair(repair))
    print(f"files: {args.out}/round{{1,2,3}}_test_{state.session_id}.json, "
          f"{args.out}/{final_ranking_filename(state.session_id)}")
    return 0


def format_repair(repair: Any) -> str:
    """What the CR repair changed in the Director's matrix, in one line."""
    changed = "; ".join(f"{_judged(c.before)} -> {_judged(c.after)}" for c in repair.changed)
    return (f"CR repair: the Director's matrix (attempt {repair.attempt}) had CR "
            f"{repair.cr_before:.3f}; changed {changed}; CR now {repair.cr_after:.3f}")


def _judged(one: dict[str, float]) -> str:
    (key, value), = one.items()
    return f"{key} {value}"


def format_turn(round_no: int, turn: Any, info: Any, *, full: bool = False) -> str:
    """One progress line per debate turn (the whole content when ``full``)."""
    content = turn.content if full else " ".join(turn.content.split())[:70]
    reasks = f", {info.reasks} re-ask{'s' * (info.reasks != 1)}" if info.reasks else ""
    return (f"round {round_no} turn {turn.turn:>2}/13  {turn.speaker:<28} "
            f"{turn.type.value:<14} {info.seconds:6.1f} s{reasks}  {content}")


# --- taskforce ----------------------------------------------------------------------------------
def cmd_taskforce(args: argparse.Namespace) -> int:
    from memlab import lab

    if args.taskforce_command == "run":
        _check_mission(args.mission)
    writable_folder(args.workdir, "--workdir")
    llm = lab.make_llm(args.llm, args.llm_model)
    embedder = lab.make_embedder(args.embedder)
    docs = lab.make_docqa(args.docs, embedder=embedder) if Path(args.docs).is_dir() else None
    if docs is not None and docs.store.count() == 0:
        docs = None
    ask = (lambda question: input(f"agent asks: {question}\n> ")) if sys.stdin.isatty() \
        else None
    agent = lab.make_taskforce(args.workdir, llm=llm, embedder=embedder, docs=docs, ask=ask,
                               max_steps_per_item=args.max_steps)
    if args.taskforce_command == "run":
        stream = agent.stream(args.mission, user_id=args.user, profile=args.profile)
    else:
        stream = agent.stream_resume(args.session_id)
    result = _follow(stream, agent, args.workdir)
    return 0 if result.succeeded else 1


def _check_mission(mission: str) -> None:
    from memlab.models.taskforce import Session

    try:
        Session(mission=mission, status="pending")
    except ValidationError as exc:
        raise ConfigError(fields_message(exc.errors())) from None


def _follow(stream: Any, agent: Any, workdir: str) -> Any:
    """Print the session id, every event as it happens, then the outcome."""
    from memlab.models.taskforce import Action, Thought

    announced = False
    while True:
        try:
            event = next(stream)
        except StopIteration as stop:
            result = stop.value
            break
        if not announced:
            print(f"session {event.session_id} (resume: memlab taskforce resume "
                  f"{event.session_id} --workdir {workdir})", flush=True)
            announced = True
        if isinstance(event, Thought):
            print(f"step {event.step_id}  thought: {event.content}", flush=True)
        elif isinstance(event, Action):
            print(f"         action: {event.action_data['tool']} "
                  f"{event.action_data['arguments']}", flush=True)
        else:
            shown = event.result if event.success else f"error: {event.error}"
            print(f"         observation: {str(shown)[:200]}", flush=True)
    print(format_session(result))
    return result


def format_session(result: Any) -> str:
    session = result.session
    lines = [f"session {session.session_id}: {session.status.value}"
             + (f" ({result.error})" if result.error else "")]
    for item in (result.todolist.items if result.todolist else []):
        answer = result.answers.get(item.position)
        lines.append(f"  {item.position}. [{item.status.value}] {item.description}"
                     + (f" -> {answer}" if answer is not None else ""))
    if result.succeeded:
        lines.append(f"answer: {result.final_answer}")
    lines.append(f"lessons used {len(result.lessons_used)}, learned "
                 f"{len(result.lessons_learned)}; re-asks {result.reasks}")
    return "\n".join(lines)
