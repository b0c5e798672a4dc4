"""Seed 003: the prioritisation debate (personas, 13-turn rounds), AHP weights and TOPSIS ranking."""

from memlab.decision.ahp import AHPResult, ahp_weights
from memlab.decision.debate import DecisionDebate, InconsistentJudgementsError, run_debate
from memlab.decision.personas import generate_personas
from memlab.decision.topsis import TopsisOutcome, topsis

__all__ = ["AHPResult", "DecisionDebate", "InconsistentJudgementsError", "TopsisOutcome",
           "ahp_weights", "generate_personas", "run_debate", "topsis"]
