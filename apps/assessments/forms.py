"""One form per step. Questionnaire questions come from the engine, so the page, the API
and the report always ask and score the same questions."""

from __future__ import annotations

from typing import Any

from django import forms

from apps.assessments.models import AgreementKind, ThresholdMode
from apps.assessments.persons import LEVEL_LABELS, POWER_CHOICES
from apps.assessments.population import region_choices
from apps.assessments.threshold_profiles import offered_profiles
from apps.datasets.models import ReleaseModel
from apps.engine import context as engine_context
from apps.engine import threshold as engine_threshold
from apps.engine.longitudinal import ALL


class AssessmentCreateForm(forms.Form):
    title = forms.CharField(
        max_length=200, required=False, help_text="Defaults to “Release of <data set>”."
    )


class ReleaseForm(forms.Form):
    release_model = forms.ChoiceField(
        choices=ReleaseModel.choices,
        widget=forms.RadioSelect,
        help_text="Public: anyone, no conditions (an access-to-information request counts as "
        "public). Semi-public: anyone who registers and accepts terms of use. Non-public: named "
        "recipients bound by a data sharing agreement.",
    )
    recipient_organization = forms.CharField(
        max_length=200, required=False, label="Recipient organization"
    )
    recipient_contact = forms.CharField(max_length=200, required=False, label="Contact person")
    purpose = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    agreement_kind = forms.ChoiceField(
        choices=AgreementKind.choices, required=False, label="Agreement with the recipient"
    )
    agreement_reference = forms.CharField(
        max_length=300, required=False, label="Agreement reference (title, number or file)"
    )
    agreement_date = forms.DateField(
        required=False, widget=forms.DateInput(attrs={"type": "date"}), label="Agreement signed on"
    )
    recipients = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        label="Recipients, one per line",
        help_text="Name each organization or person who will hold the data: whether data "
        "identify someone is judged from the side of each recipient (Court of Justice, "
        "C-413/23 P, 2025). Left empty, the recipient organization above is the one recipient.",
    )
    pseudonym_linkers = forms.CharField(
        max_length=500,
        required=False,
        label="Pseudonymisation domain: who can link pseudonyms back to people",
        help_text="For pseudonymised or encrypted identifiers (Step 7): the people or services "
        "holding the means to re-attribute them, kept outside the recipients' reach "
        "(EDPB Guidelines 01/2025 on pseudonymisation, section 3).",
    )
    pseudonym_key_kept = forms.CharField(
        max_length=500,
        required=False,
        label="Where the key or linking table is kept",
        help_text="The system or custodian holding it, separate from the release.",
    )
    pseudonym_domain = forms.ChoiceField(
        required=False,
        label="Keys of keyed pseudonyms",
        help_text="By default this release's keyed pseudonyms use keys of their own, so no "
        "other release can be linked to it. A named domain, defined by an administrator for "
        "e.g. one research programme, gives every release in it the same key: the same "
        "identifier then gets the same pseudonym in each (EDPB Guidelines 01/2025, section 3).",
    )

    def __init__(self, *args: Any, domains: list[Any] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["pseudonym_domain"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [
            ("", "A new key for this release (not linkable)"),
            *((str(d.id), f"Named domain: {d.name}") for d in domains or []),
        ]


def _choice_field(
    label: str, answers: tuple[str, ...], *, required: bool = True
) -> forms.ChoiceField:
    return forms.ChoiceField(
        label=label, choices=[(a, a) for a in answers], widget=forms.RadioSelect, required=required
    )


class ThresholdForm(forms.Form):
    profile = forms.ChoiceField(
        choices=[(key, data["name"]) for key, data in engine_threshold.PROFILES.items()],
        label="Jurisdiction profile",
        help_text="Only the profiles whose source sets a threshold for this release model are "
        "listed; each one's values, measure and source are shown below.",
    )
    mode = forms.ChoiceField(
        choices=ThresholdMode.choices,
        widget=forms.RadioSelect,
        initial=ThresholdMode.PROFILE,
        label="How the threshold is set",
    )
    preset = forms.ChoiceField(
        choices=[("", "—")]
        + [(k, f"{v['name']} ({v['value']:.4g})") for k, v in engine_threshold.PRESETS.items()],
        required=False,
    )
    custom_value = forms.FloatField(
        required=False, min_value=0.000001, max_value=1, label="Custom threshold (probability)"
    )
    justification = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        help_text="Required for a preset or a custom threshold; printed in the report.",
    )

    def __init__(self, *args: Any, release_model: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only the profiles that set a value for this release model (IPC 2016 step 3 sets
        # the threshold per release; the EMA's 0.09 is for public clinical reports only).
        profile_field = self.fields["profile"]
        assert isinstance(profile_field, forms.ChoiceField)
        profile_field.choices = [(p["key"], p["name"]) for p in offered_profiles(release_model)]
        for key, question, answers in engine_threshold.INVASION_FACTORS:
            self.fields[f"q_{key}"] = _choice_field(question, answers)

    def answers(self) -> dict[str, str]:
        return {
            key: self.cleaned_data[f"q_{key}"] for key, _, _ in engine_threshold.INVASION_FACTORS
        }

    def question_fields(self) -> list[forms.BoundField]:
        return [self[f"q_{key}"] for key, _, _ in engine_threshold.INVASION_FACTORS]


class ContextForm(forms.Form):
    prevalence = forms.FloatField(
        min_value=0,
        max_value=1,
        required=False,
        help_text="Share of the population that has the data set's condition (e.g. 0.05). Use 1 "
        "when anyone could be in the data set (a population register).",
    )
    prevalence_source = forms.CharField(
        max_length=300, required=False, label="Source of the prevalence"
    )
    acquaintances = forms.IntegerField(
        min_value=engine_context.ACQUAINTANCES_RANGE[0],
        max_value=engine_context.ACQUAINTANCES_RANGE[1],
        initial=engine_context.DEFAULT_ACQUAINTANCES,
        label="Acquaintances per person (m)",
        help_text="150 (Dunbar's number) by default; 150–190 allowed.",
    )
    single_sex = forms.BooleanField(
        required=False, label="The condition concerns one sex only (m is halved)"
    )
    breach_rate = forms.FloatField(
        min_value=0,
        max_value=1,
        initial=engine_context.DEFAULT_BREACH_RATE,
        label="Yearly breach probability at the recipient (T3)",
    )
    breach_source = forms.CharField(
        max_length=400,
        required=False,
        help_text="Required when the rate differs from the default 0.27.",
    )

    target_in_sample = forms.ChoiceField(
        choices=[
            ("known", "Yes — the adversary knows the person they look for is in the data"),
            ("not_known", "No — the adversary cannot tell whether the person is in the data"),
        ],
        widget=forms.RadioSelect,
        initial="known",
        label="Does the adversary know their target is in the data?",
        help_text="Knowing it is the prosecutor's position, the one the guideline measures "
        "(IPC 2016, step 4); not knowing it is the journalist's, which only a sample of a "
        "larger population allows (El Emam & Arbuckle, ch. 2).",
    )

    def __init__(
        self, *args: Any, non_public: bool = True, columns: list[str] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.fields["known_columns"] = forms.MultipleChoiceField(
            choices=[(c, c) for c in columns or []],
            widget=forms.CheckboxSelectMultiple,
            required=False,
            label="Columns the adversary already knows",
            help_text="Prefilled with the quasi-identifiers of Step 2; add any column the "
            "recipient could learn from another source (a column an adversary can know is a "
            "quasi-identifier, IPC 2016 step 2). The attack tests after Step 7 use them.",
        )
        for key, label in engine_context.CONTROLS:
            self.fields[f"c_{key}"] = _choice_field(
                label, ("yes", "partial", "no"), required=non_public
            )
        for key, question, answers in engine_context.MOTIVES:
            self.fields[f"m_{key}"] = _choice_field(question, answers, required=non_public)

    def control_fields(self) -> list[forms.BoundField]:
        return [self[f"c_{key}"] for key, _ in engine_context.CONTROLS]

    def motive_fields(self) -> list[forms.BoundField]:
        return [self[f"m_{key}"] for key, _, _ in engine_context.MOTIVES]

    def answers(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "controls": {k: data.get(f"c_{k}") or None for k, _ in engine_context.CONTROLS},
            "motives": {k: data.get(f"m_{k}") or None for k, _, _ in engine_context.MOTIVES},
            "prevalence": data.get("prevalence"),
            "prevalence_source": data.get("prevalence_source", ""),
            "acquaintances": data.get("acquaintances") or engine_context.DEFAULT_ACQUAINTANCES,
            "single_sex": bool(data.get("single_sex")),
            "breach_rate": data.get("breach_rate")
            if data.get("breach_rate") is not None
            else engine_context.DEFAULT_BREACH_RATE,
            "breach_source": data.get("breach_source", ""),
        }

    @classmethod
    def initial_from(cls, answers: dict[str, Any]) -> dict[str, Any]:
        initial: dict[str, Any] = {
            k: answers.get(k)
            for k in (
                "prevalence",
                "prevalence_source",
                "acquaintances",
                "single_sex",
                "breach_rate",
                "breach_source",
            )
            if answers.get(k) is not None
        }
        for k, v in (answers.get("controls") or {}).items():
            initial[f"c_{k}"] = v
        for k, v in (answers.get("motives") or {}).items():
            initial[f"m_{k}"] = v
        return initial


class UtilityForm(forms.Form):
    note = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Why the remaining utility is acceptable for the purpose",
    )


class PopulationForm(forms.Form):
    """Step 4: is the release a sample of a larger population, and of which (issue #17)?"""

    population_kind = forms.ChoiceField(
        label="Is the release a sample of a larger population?",
        choices=[
            ("none", "No — the data is the whole population (default, IPC 2016)"),
            ("region", "Yes — of a region's population"),
            ("size", "Yes — of a population of a size I give"),
        ],
        widget=forms.RadioSelect,
        initial="none",
    )
    population_region = forms.ChoiceField(label="Region", required=False, choices=())
    population_size = forms.IntegerField(
        label="Population size (people)",
        required=False,
        min_value=1,
        help_text="For example the size of the survey's target population.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        region = self.fields["population_region"]
        assert isinstance(region, forms.ChoiceField)
        region.choices = [("", "—"), *region_choices()]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        kind = data.get("population_kind")
        if kind == "region" and not data.get("population_region"):
            self.add_error("population_region", "Choose a region.")
        if kind == "size" and not data.get("population_size"):
            self.add_error("population_size", "Give the population size.")
        return data

    def choice(self) -> dict[str, Any]:
        """Keyword arguments for `assessment_set_population`."""
        kind = self.cleaned_data["population_kind"]
        if kind == "region":
            return {"region": self.cleaned_data["population_region"]}
        if kind == "size":
            return {"size": self.cleaned_data["population_size"]}
        return {}

    @classmethod
    def initial_from(cls, population: dict[str, Any]) -> dict[str, Any]:
        if population.get("region"):
            return {"population_kind": "region", "population_region": population["region"]}
        if population.get("size"):
            return {"population_kind": "size", "population_size": population["size"]}
        return {"population_kind": "none"}


class PersonsForm(forms.Form):
    """Step 2, several rows per person (issue 25): the person key and each
    quasi-identifier's level. ``levels_for`` is the key the levels shown were suggested
    for: when the key changes, the posted levels are dropped and the new key's suggestion
    is taken (the page shows it for review)."""

    person_key = forms.ChoiceField(
        label="Column that names the person",
        required=False,
        help_text="Only columns classified as direct identifiers: the key leaves the release "
        "as a keyed pseudonym, like the other direct identifiers.",
    )
    levels_for = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, candidates: list[str], quasi: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        key = self.fields["person_key"]
        assert isinstance(key, forms.ChoiceField)
        key.choices = [("", "None: one row per person"), *((c, c) for c in candidates)]
        self.quasi = quasi
        for column in quasi:
            self.fields[f"level_{column}"] = forms.ChoiceField(
                label=column, choices=list(LEVEL_LABELS.items()), required=False
            )

    def level_fields(self) -> list[forms.BoundField]:
        return [self[f"level_{column}"] for column in self.quasi]

    def levels(self) -> dict[str, str]:
        """The levels to save: none when the key changed from the one they were shown for."""
        data = self.cleaned_data
        if not data["person_key"] or data["levels_for"] != data["person_key"]:
            return {}
        return {c: data[f"level_{c}"] for c in self.quasi if data.get(f"level_{c}")}


class PowerForm(forms.Form):
    """Step 4 with a person key: the adversary power."""

    power = forms.ChoiceField(
        label="Adversary power: how many of a person's events an adversary knows",
        help_text="Besides the person-level values. 3 unless you have reason to assume more "
        "or fewer; 'all' assumes the adversary knows every event (El Emam & Arbuckle 2013, ch. 6).",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        power = self.fields["power"]
        assert isinstance(power, forms.ChoiceField)
        power.choices = [(p, "all events" if p == ALL else p) for p in POWER_CHOICES]


class PersonDatesForm(forms.Form):
    """Step 4 with a person key: the event-level date columns, how they are measured, and
    the number of events per person. The form only gathers the values: the one reader of
    these settings (``configuration.parse``, through ``person_dates.assessment_set_dates``)
    checks them, for the page and the API alike."""

    date_columns = forms.MultipleChoiceField(
        label="Event-level date columns",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="The dates of each event (admission, service, dispensing). Leave empty when "
        "no quasi-identifier is a date (LONGITUDINAL.md §2.7).",
    )
    date_mode = forms.ChoiceField(
        label="Date mode",
        required=False,
        choices=[
            ("absolute", "Absolute: each date generalized to day, month, quarter or year"),
            (
                "anchored",
                "Anchored: the first event date (generalized) and the days from it to each "
                "later event, in bins of 7, 30, 90 or 365 days",
            ),
        ],
        initial="absolute",
        help_text="Anchored keeps the order and spacing of a person's events while hiding "
        "the calendar dates (LONGITUDINAL.md §2.7, after El Emam et al.'s date method).",
    )
    shift_days = forms.IntegerField(
        label="Shift each person's dates by a secret random offset of up to ± days",
        required=False,
        help_text="Empty: no shift. With a shift (anchored mode), the risk is measured on what "
        "the shift leaves: the days between a person's events, and the first date only to the "
        "shift's range. The offsets are never shown nor reported.",
    )
    event_count = forms.BooleanField(
        label="Count the number of events per person as a person-level quasi-identifier",
        required=False,
        initial=True,
        help_text="Someone who knows how many visits a person had can single them out "
        "(LONGITUDINAL.md §2.6, TC1 and TC9); offered by default for data with several rows "
        "per person. Counted as the release shows it (each person's rows), with a "
        "top-code: an adversary is assumed to know a count beyond it only as 'or more'.",
    )
    event_count_top = forms.CharField(
        label="Top-code of the number of events",
        required=False,
        initial="p95",
        help_text="p95: the 95th percentile of events per person (the default; the value "
        "used is shown with the result); a number; or none.",
    )

    def __init__(self, *args: Any, columns: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["date_columns"]
        assert isinstance(field, forms.MultipleChoiceField)
        field.choices = [(c, c) for c in columns or []]

    @staticmethod
    def initial_from(state: dict[str, Any]) -> dict[str, Any]:
        """The stored settings (``person_dates.dates_state``) as the form's initial values;
        never chosen: the event count offered, with the 95th-percentile top-code."""
        dates = state.get("dates") or {}
        counted = state.get("event_count")
        top = "p95" if counted is None else counted.get("top")
        return {
            "date_columns": list(dates.get("columns") or []),
            "date_mode": dates.get("mode") or "absolute",
            "shift_days": dates.get("shift_days"),
            "event_count": True if counted is None else bool(counted.get("enabled")),
            "event_count_top": "none" if top is None else str(top),
        }

    def settings(self) -> dict[str, Any]:
        """The settings as the API sends them."""
        data = self.cleaned_data
        columns = list(data.get("date_columns") or [])
        return {
            "dates": {
                "columns": columns,
                "mode": data.get("date_mode") or "absolute",
                "shift_days": data.get("shift_days"),
            }
            if columns or data.get("shift_days") is not None or data.get("date_mode") == "anchored"
            else None,
            "event_count": {
                "enabled": True,
                "top": (data.get("event_count_top") or "p95").strip(),
            }
            if data.get("event_count")
            else {"enabled": False, "top": "p95"},
        }
