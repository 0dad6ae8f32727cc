"""The Step 7 page: masking, hierarchies, privacy models, techniques, search, choice and
apply on one page, each POST an action (``_perform``) that calls its service, is recorded
in the audit log when it changes the settings, and redirects; and the page's two htmx
fragments (a technique tried on a sample, the search's precheck). The form's text fields
are read in ``deidentify_form``; the comparison of two alternatives is ``views_compare``;
the preview and downloads of the written file are ``views_release``."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from apps.accounts.decorators import membership_of, org_view, user_of
from apps.accounts.models import Organization
from apps.assessments import deidentify, release_apply
from apps.assessments.configuration import MASKING_METHODS, METRICS, DeidConfig
from apps.assessments.deidentify_form import (
    config_from_form,
    hierarchy_params_from_form,
    technique_from_form,
    whole_number,
)
from apps.assessments.freetext import (
    free_text_columns,
    identifier_findings,
    identifiers_reviewed_set,
)
from apps.assessments.hierarchies import (
    class_threshold,
    hierarchies_proposed,
    hierarchy_preview,
    hierarchy_set,
)
from apps.assessments.models import Assessment, HierarchySpec
from apps.assessments.person_dates import date_levels_shown
from apps.assessments.precheck import assessment_precheck
from apps.assessments.presenters import pareto_chart
from apps.assessments.privacy_models import OFFERED_KINDS, step4_findings
from apps.assessments.release_columns import column_findings, columns_reviewed_set, masked_columns
from apps.assessments.release_forms.presenters import release_form_context
from apps.assessments.selectors import assessment_get, quasi_identifiers, sensitive_columns
from apps.assessments.solution_words import ALTERNATIVE_SORTS, alternatives_rows
from apps.assessments.techniques import NUMERIC as NUMERIC_TECHNIQUES
from apps.assessments.techniques import TITLES as TECHNIQUE_TITLES
from apps.assessments.techniques import technique_columns, technique_preview, techniques_set
from apps.assessments.verdicts import search_verdict
from apps.assessments.views_base import _context, _go, step_view
from apps.audit.services import audit_record
from apps.core.errors import ApplicationError
from apps.core.labels import label_for
from apps.engine.errors import EngineError
from apps.engine.hierarchies import DATE_LEVELS
from apps.engine.hierarchy_files import decoded
from apps.engine.sensitive import parse_model
from apps.jobs.selectors import job_refresh


@step_view("deidentify")
def deidentify_step(
    request: HttpRequest, organization: Organization, assessment: Assessment
) -> HttpResponse:
    if request.method == "POST":
        action = request.POST.get("action", "")
        try:
            message = _act(request, assessment, action)
        except ApplicationError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, message)
        return _go(organization, assessment, "deidentify")
    # Jobs first, then the assessment: a handler commits its result before its job is marked
    # finished, so a finished job read here always comes with its result below.
    search_job = job_refresh(assessment.search_job) if assessment.search_job else None
    apply_job = job_refresh(assessment.apply_job) if assessment.apply_job else None
    assessment.refresh_from_db()
    specs: list[HierarchySpec] = []
    error = ""
    if assessment.threshold_result and assessment.context_result:
        try:
            specs = (
                list(hierarchies_proposed(assessment=assessment).values())
                if assessment.status == "draft"
                else list(HierarchySpec.objects.filter(assessment=assessment))
            )
        except ApplicationError as exc:
            error = exc.message
    config = deidentify.deid_config(assessment)
    search = assessment.search_result
    return render(
        request,
        "assessments/step_deidentify.html",
        _context(
            request,
            assessment,
            "deidentify",
            config=config,
            release_forms=release_form_context(assessment),
            techniques=[t.to_json() for t in config.techniques or ()],
            directs=deidentify.direct_identifiers(assessment),
            free_text=free_text_columns(assessment),
            findings=identifier_findings(assessment.apply_result, assessment.deid),
            column_findings=column_findings(assessment.apply_result, assessment.deid),
            masked_columns=masked_columns(assessment.apply_result),
            privacy_rows=_privacy_rows(assessment, config),
            technique_titles=TECHNIQUE_TITLES,
            numeric_techniques=NUMERIC_TECHNIQUES,
            technique_columns=technique_columns(assessment),
            quasi=quasi_identifiers(assessment),
            model_kinds=[(k, label_for("privacy_model", k)) for k in OFFERED_KINDS],
            methods=MASKING_METHODS,
            metrics=METRICS,
            hierarchies=[_hierarchy_item(request, assessment, config, s) for s in specs],
            class_size=class_threshold(assessment),
            kinds=HierarchySpec.Kind.choices,
            code_kinds=[("icd10", "ICD-10"), ("icd9cm", "ICD-9-CM")],
            date_levels=DATE_LEVELS,
            search=search,
            verdict=search_verdict(search),
            search_job=search_job,
            search_timing=_search_timing(search, search_job),
            apply_job=apply_job,
            pareto=pareto_chart(search, assessment.chosen_levels) if search else None,
            alternatives=alternatives_rows(
                search,
                assessment.chosen_levels,
                sort=request.GET.get("sort", ""),
                descending=request.GET.get("dir") == "desc",
            ),
            sort=request.GET.get("sort", "")
            if request.GET.get("sort") in ALTERNATIVE_SORTS
            else "",
            sort_descending=request.GET.get("dir") == "desc",
            sort_columns=[
                ("suppressed", "Records suppressed"),
                ("max_risk", "Max risk"),
                ("average_risk", "Average risk"),
                ("loss", "Information loss"),
            ],
            target=deidentify.search_target(assessment)
            if assessment.threshold_result and assessment.context_result
            else None,
            error=error,
        ),
    )


def _hierarchy_item(
    request: HttpRequest, assessment: Assessment, config: DeidConfig, spec: HierarchySpec
) -> dict[str, Any]:
    """A quasi-identifier's hierarchy on Step 7's page: the saved one with its preview and
    editor; for a column the date settings handle, the date mode's own levels (the search
    reads no saved hierarchy for it: ``person_dates.date_levels_shown``)."""
    dates = date_levels_shown(config, spec.column)
    return {
        "spec": spec,
        "dates": dates,
        "preview": []
        if dates is not None
        else hierarchy_preview(
            assessment, spec, raw_values=membership_of(request).can_see_raw_values
        ),
        "height": spec.height if dates is None else dates["height"],
        "max_level": config.max_levels.get(spec.column, ""),
    }


def _privacy_rows(assessment: Assessment, config: DeidConfig) -> list[dict[str, Any]]:
    """Per sensitive variable: its model's form values and the Step 4 finding behind it."""
    findings = step4_findings(assessment.risk_result)
    current = {m.column: parse_model(m.column, m.spec) for m in config.privacy_models}
    rows = []
    for column in sensitive_columns(assessment):
        model = current.get(column)
        rows.append(
            {
                "column": column,
                "kind": model.kind if model else "",
                "l": f"{model.l:g}" if model and model.l else "2",
                "c": f"{model.c:g}" if model and model.c else "3",
                "t": f"{model.t:g}" if model and model.t else "0.2",
                "describe": model.describe() if model else "",
                "finding": findings.get(
                    column, "Run Step 4 to see its attribute-disclosure finding."
                ),
            }
        )
    return rows


@org_view(edit=True)
def technique_preview_view(
    request: HttpRequest, organization: Organization, assessment_id: UUID
) -> HttpResponse:
    """The htmx fragment: one configured technique tried on a sample before applying."""
    assessment = assessment_get(organization=organization, assessment_id=assessment_id)
    try:
        preview, error = (
            technique_preview(assessment=assessment, index=int(request.GET.get("index", "-1"))),
            "",
        )
    except ValueError:
        preview, error = {}, "Pick a technique by its number."
    except ApplicationError as exc:
        preview, error = {}, exc.message
    return render(
        request, "assessments/_technique_preview.html", {"preview": preview, "error": error}
    )


@org_view()
def search_precheck(
    request: HttpRequest, organization: Organization, assessment_id: UUID
) -> HttpResponse:
    """The htmx fragment shown before a search: lattice size, time, feasibility."""
    assessment = assessment_get(organization=organization, assessment_id=assessment_id)
    try:
        check, error = assessment_precheck(assessment), ""
    except ApplicationError as exc:
        check, error = {}, exc.message
    return render(request, "assessments/_precheck.html", {"check": check, "error": error})


def _act(request: HttpRequest, assessment: Assessment, action: str) -> str:
    message = _perform(request, assessment, action)
    if action in {"config", "hierarchy", "choose"}:
        assessment.refresh_from_db()
        audit_record(
            organization=assessment.organization,
            actor=request.user,
            action=f"assessment.deidentify.{action}",
            obj=assessment,
            details={
                "deid_config": assessment.deid_config,
                "chosen_levels": assessment.chosen_levels,
                "column": request.POST.get("column", ""),
                "kind": request.POST.get("kind", ""),
            },
        )
    return message


def _perform(request: HttpRequest, assessment: Assessment, action: str) -> str:
    post = request.POST
    if action == "config":
        deidentify.deid_config_save(
            assessment=assessment, config=config_from_form(post, assessment)
        )
        return "Settings saved."
    if action == "hierarchy":
        column, kind = post.get("column", ""), post.get("kind", "")
        data = post.copy()
        arx_file = request.FILES.get("arx_file")
        if arx_file is not None:
            named = f"Hierarchy file '{arx_file.name}' of '{column}'"
            try:
                data["arx_file"] = decoded(arx_file.read(), named)
            except EngineError as exc:
                raise ApplicationError(str(exc), {"column": column}) from None
        params, arx_text = hierarchy_params_from_form(data, kind)
        hierarchy_set(
            assessment=assessment, column=column, kind=kind, params=params, arx_text=arx_text
        )
        return f"Hierarchy of '{column}' saved; run the search again."
    if action == "search":
        deidentify.assessment_start_search(assessment=assessment, user=user_of(request))
        return "The search has started."
    if action == "choose":
        search = assessment.search_result or {}
        levels = {
            q: whole_number(post.get(f"level-{q}", ""), f"The level of '{q}'")
            for q in search.get("quasi_identifiers", [])
        }
        deidentify.assessment_choose_solution(assessment=assessment, levels=levels)
        return "Solution chosen; apply it to write the de-identified file."
    if action == "apply":
        release_apply.assessment_start_apply(assessment=assessment, user=user_of(request))
        return "Writing the de-identified file."
    if action in ("technique_add", "technique_remove"):
        current = [t.to_json() for t in deidentify.deid_config(assessment).techniques or ()]
        if action == "technique_remove":
            try:
                del current[int(post.get("index", ""))]
            except (ValueError, IndexError):
                raise ApplicationError("No such technique in Step 7's settings.") from None
        else:
            current.append(technique_from_form(post, assessment))
        techniques_set(assessment=assessment, user=user_of(request), entries=current)
        return "Techniques saved; write the de-identified file again to apply them."
    if action == "identifiers_reviewed":
        column = post.get("column", "")
        identifiers_reviewed_set(
            assessment=assessment,
            user=user_of(request),
            column=column,
            reason=post.get("reason", ""),
            ground=post.get("ground", ""),
        )
        return f"Your reading of what was found in '{column}' is recorded."
    if action == "columns_reviewed":
        column = post.get("column", "")
        columns_reviewed_set(
            assessment=assessment,
            user=user_of(request),
            column=column,
            reason=post.get("reason", ""),
            ground=post.get("ground", ""),
        )
        return f"Your explanation of what was found in the released column '{column}' is recorded."
    raise ApplicationError("Unknown action.")


def _search_timing(search: dict[str, Any] | None, job: Any) -> str:
    """The search job's own timing in words: its record has every phase; the stored
    result has those before storing (a result stored without a record of its job)."""
    if not search:
        return ""
    timing = (job.result or {}).get("timing") if job is not None and job.result else None
    timing = timing or search.get("timing")
    if not timing:
        return ""
    parts = [
        f"{label} {timing[key]:.2f} s"
        for key, label in (
            ("read", "reading the data"),
            ("encode", "encoding it"),
            ("search", "the search"),
            ("store", "storing the result"),
        )
        if key in timing
    ]
    total = timing.get("total", sum(timing[k] for k in ("read", "encode", "search") if k in timing))
    return f"{total:.2f} s: " + ", ".join(parts) + "."
