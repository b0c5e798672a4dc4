"""What every seed model must do, checked over all of memlab.models: each exported model has a
sample, survives a JSON round trip, and malformed JSON names the field and the rule.

The samples (``SAMPLES``) and malformed payloads (``MALFORMED``) live next to each area's own
tests in ``tests/test_models_<area>.py``.
"""

import pytest
import test_models_decision
import test_models_operating
import test_models_retrieval
import test_models_sleep
import test_models_taskforce
import test_models_turns
from pydantic import BaseModel, ValidationError

from memlab.models import decision, operating, retrieval, sleep, taskforce, turns

AREAS = {
    "decision": (decision, test_models_decision),
    "operating": (operating, test_models_operating),
    "retrieval": (retrieval, test_models_retrieval),
    "sleep": (sleep, test_models_sleep),
    "taskforce": (taskforce, test_models_taskforce),
    "turns": (turns, test_models_turns),
}


@pytest.mark.parametrize("area", sorted(AREAS))
def test_every_exported_model_has_a_sample(area):
    module, tests = AREAS[area]
    exported = [getattr(module, name) for name in module.__all__]
    models = {c for c in exported if isinstance(c, type) and issubclass(c, BaseModel)}
    assert models == {type(obj) for obj in tests.SAMPLES.values()}


@pytest.mark.parametrize(("area", "name"), [(area, name) for area, (_, tests) in sorted(AREAS.items())
                                            for name in sorted(tests.SAMPLES)])
def test_json_round_trip(area, name):
    obj = AREAS[area][1].SAMPLES[name]
    assert type(obj).model_validate_json(obj.model_dump_json()) == obj


@pytest.mark.parametrize(("model", "payload", "fragments"), [
    pytest.param(*case, id=f"{area}-{case[0].__name__}-{i}")
    for area, (_, tests) in sorted(AREAS.items()) for i, case in enumerate(tests.MALFORMED)])
def test_malformed_json_names_field_and_rule(model, payload, fragments):
    with pytest.raises(ValidationError) as exc:
        model.model_validate_json(payload)
    for fragment in fragments:
        assert fragment in str(exc.value)
