"""Seed 004: the Taskforce ReAct agent (planner, tools, versioned state, lessons, resume)."""

from memlab.taskforce.planner import Planner, execution_order
from memlab.taskforce.react import SessionResult, TaskforceAgent
from memlab.taskforce.repository import TaskforceRepository
from memlab.taskforce.tools import TOOLS, Tool, Toolbox

__all__ = ["TOOLS", "Planner", "SessionResult", "TaskforceAgent", "TaskforceRepository", "Tool",
           "Toolbox", "execution_order"]
