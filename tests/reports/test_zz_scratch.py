import json
from tests.assessments.test_pages import complete

def test_dump(assessment, analyst):
    complete(assessment, analyst)
    a = assessment
    out = {k: getattr(a, k) for k in ["threshold_result", "risk_result", "context_result", "deid_config", "search_result", "chosen_levels", "apply_result", "step_state"]}
    from apps.assessments.selectors import overall_risk
    out["overall"] = overall_risk(a)
    out["hier"] = [dict(column=h.column, kind=h.kind, params=h.params, height=h.height, labels=h.level_labels) for h in a.hierarchies.all()]
    from apps.classification.models import Variable
    out["vars"] = [dict(name=v.name, role=v.role, reason=v.reason, kind=v.suggestion_kind) for v in Variable.objects.filter(dataset=a.dataset)]
    open("/tmp/dump.json", "w").write(json.dumps(out, indent=1, default=str))
