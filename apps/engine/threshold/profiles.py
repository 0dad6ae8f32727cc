"""Threshold profiles and presets as data: the one loader that reads and validates them.

Every profile is a JSON file in ``data/profiles/`` and every preset one in
``data/presets/`` (file name = key).  `load_directory` reads them at import; a file that
does not validate stops the import with a message naming the file and the field, so a
bad edition never reaches a page.  A new edition is added by adding a file; no code
changes.  A profile whose primary text could not be obtained is kept as a file with
``"offered": false`` and a ``withheld_reason``: it is listed in `WITHHELD`, never in
`PROFILES`, and `get_profile` refuses it with that reason.

A profile file (``schema`` 1)::

    key, name                      the key (= file name) and the name people read
    edition {version, date}        the edition, date as YYYY, YYYY-MM or YYYY-MM-DD
    offered                        false: not offered (then withheld_reason, no values)
    source                         the document, in full
    levels_graded_by               what low / medium / high grade: invasion_of_privacy,
                                   potential_harm, impact, or none (one value for all)
    thresholds {low, medium, high} the values, each in (0, 1]
    threshold_source               the document's section or table the values are from
    read_from                      where the values were read, when not in the primary
                                   text itself (a handbook tabling a standard)
    release_models {model: {measure, thresholds?, threshold_source?}}
                                   the release models the values apply to, and to which
                                   risk measure (max, average, strict_average); a model
                                   absent here is one the source sets no value for
    cell_sizes                     the source's own cell-size column, if it prints one
    insider_attack                 the T1 table (controls × motives), or
                                   {"from_profile": key} when the source gives none
    insider_attack_source, semi_public_insider, notes

A preset file: ``key``, ``name``, ``source``, ``measure`` and either ``value`` or
``minimum_class_size`` (value = 1/k, so "k ≥ 11" is exactly 1/11).

Data registered at run time (`register_profile`) may use the shorter layout of the
first profiles (no schema, edition or release models): the product's own mapping of
release models to measures (METHOD step 4) is then assumed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from types import MappingProxyType
from typing import Any

from apps.engine.errors import EngineInputError

LEVELS = ("low", "medium", "high")
DEFAULT_PROFILE = "ontario_ipc_2016"
RELEASE_MODELS = ("public", "semi_public", "non_public")
#: Risk measures a threshold can be compared with (METHOD step 4).
MEASURES = ("max", "average", "strict_average")
GRADINGS = ("invasion_of_privacy", "potential_harm", "impact", "none")
SCHEMA = 1
# Read through importlib.resources, so the files are found wherever the package is imported
# from (a zip shipped to Spark executors included).
DATA_DIR: Traversable = resources.files(__package__).joinpath("data")

#: METHOD step 4 (IPC 2016, step 4.2): public and semi-public releases are measured by the
#: maximum risk, non-public ones by the strict average.  Assumed for data that names none.
PRODUCT_MEASURES: Mapping[str, str] = MappingProxyType(
    {"public": "max", "semi_public": "max", "non_public": "strict_average"}
)
_KEY = re.compile(r"^[a-z][a-z0-9_]{1,39}$")
_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


@dataclass(frozen=True)
class ThresholdRule:
    """The values a profile sets for one release model, and the measure they bound."""

    release_model: str
    measure: str  # one of MEASURES
    thresholds: Mapping[str, float]
    source: str


@dataclass(frozen=True)
class Profile:
    """A validated jurisdiction profile (read-only view of its data)."""

    key: str
    name: str
    source: str
    thresholds: Mapping[str, float]
    cell_sizes: Mapping[str, int]
    threshold_source: str
    insider_attack: Mapping[str, Mapping[str, float]]
    insider_attack_source: str
    semi_public_insider: Mapping[str, str]
    edition_version: str | None = None
    edition_date: str | None = None
    levels_graded_by: str = "invasion_of_privacy"
    read_from: str | None = None
    release_models: Mapping[str, ThresholdRule] = field(
        default_factory=lambda: MappingProxyType({})
    )
    notes: str = ""

    @property
    def controls_levels(self) -> tuple[str, ...]:
        return tuple(self.insider_attack)

    def rule_for(self, release_model: str) -> ThresholdRule:
        """The values for one release model; refused when the source sets none for it."""
        if release_model not in RELEASE_MODELS:
            raise EngineInputError(
                f"release model must be one of {', '.join(RELEASE_MODELS)}, not {release_model!r}"
            )
        rule = self.release_models.get(release_model)
        if rule is None:
            covered = ", ".join(m.replace("_", "-") for m in self.release_models) or "none"
            raise EngineInputError(
                f"the {self.name} profile sets no threshold for a "
                f"{release_model.replace('_', '-')} release (it covers: {covered}); "
                "choose another profile or a custom threshold with a justification"
            )
        return rule


@dataclass(frozen=True)
class WithheldProfile:
    """A profile known to exist but not offered (its primary text could not be obtained)."""

    key: str
    name: str
    source: str
    edition_version: str | None
    edition_date: str | None
    reason: str


def check_probability(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise EngineInputError(f"{what} must be a number in (0, 1], not {value!r}")
    return float(value)


def _text(data: Mapping[str, Any], field: str, where: str) -> str:
    value = data.get(field)
    if not isinstance(value, str) or not value.strip():
        raise EngineInputError(f"{where}: {field!r} must be a non-empty text")
    return value.strip()


def _optional_text(data: Mapping[str, Any], field: str, where: str) -> str | None:
    return None if data.get(field) in (None, "") else _text(data, field, where)


def _levels(values: Any, what: str) -> dict[str, float]:
    if not isinstance(values, Mapping):
        raise EngineInputError(f"{what} must give a value for each of {', '.join(LEVELS)}")
    extra = sorted(set(values) - set(LEVELS))
    if extra:
        raise EngineInputError(f"{what}: unknown level(s) {', '.join(map(str, extra))}")
    return {lv: check_probability(values[lv], f"{what} {lv}") for lv in LEVELS}


def _edition(data: Mapping[str, Any], where: str) -> tuple[str | None, str | None]:
    edition = data.get("edition")
    if edition is None:
        return None, None
    if not isinstance(edition, Mapping):
        raise EngineInputError(f"{where}: 'edition' must be {{version, date}}")
    date = edition.get("date")
    if date is not None and (not isinstance(date, str) or not _DATE.match(date)):
        raise EngineInputError(f"{where}: edition date {date!r} is not YYYY, YYYY-MM or YYYY-MM-DD")
    version = edition.get("version")
    return (None if version is None else str(version)), date


def _check_key(key: str, data: Mapping[str, Any]) -> str:
    if not _KEY.match(key):
        raise EngineInputError(
            f"profile key {key!r} must be 2-40 lower-case letters, digits or underscores"
        )
    return key


def _insider_table(
    key: str, data: Mapping[str, Any], known: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, dict[str, float]], str]:
    raw = data["insider_attack"]
    source = _text(data, "insider_attack_source", f"profile {key!r}")
    if isinstance(raw, Mapping) and "from_profile" in raw:
        other = raw["from_profile"]
        if other == key or other not in known:
            raise EngineInputError(
                f"profile {key!r}: its insider-attack table refers to {other!r}, "
                "which is not a profile with a table of its own"
            )
        raw = known[other]["insider_attack"]
        if isinstance(raw, Mapping) and "from_profile" in raw:
            raise EngineInputError(f"profile {key!r}: {other!r} has no table of its own")
    table = {
        str(controls): {m: check_probability(row[m], f"{key} T1[{controls}][{m}]") for m in LEVELS}
        for controls, row in raw.items()
    }
    if not table:
        raise EngineInputError(f"profile {key!r}: its insider-attack table is empty")
    return table, source


def _release_rules(
    key: str, data: Mapping[str, Any], thresholds: dict[str, float], threshold_source: str
) -> dict[str, ThresholdRule]:
    raw = data.get("release_models")
    if raw is None:
        raw = {model: {"measure": measure} for model, measure in PRODUCT_MEASURES.items()}
    if not isinstance(raw, Mapping) or not raw:
        raise EngineInputError(f"profile {key!r}: 'release_models' must name at least one model")
    rules = {}
    for model, spec in raw.items():
        where = f"profile {key!r}, release model {model!r}"
        if model not in RELEASE_MODELS:
            raise EngineInputError(f"{where}: not one of {', '.join(RELEASE_MODELS)}")
        if not isinstance(spec, Mapping) or spec.get("measure") not in MEASURES:
            raise EngineInputError(f"{where}: 'measure' must be one of {', '.join(MEASURES)}")
        values = (
            _levels(spec["thresholds"], f"{key} {model} threshold")
            if "thresholds" in spec
            else thresholds
        )
        source = _optional_text(spec, "threshold_source", where) or threshold_source
        rules[model] = ThresholdRule(model, str(spec["measure"]), MappingProxyType(values), source)
    return rules


def profile_from_data(
    key: str, data: Mapping[str, Any], known: Mapping[str, Mapping[str, Any]] | None = None
) -> Profile:
    """Validate a profile given as data (dict or parsed JSON).

    ``known``: the other profiles' data, for a T1 table taken ``from_profile`` (default:
    the registered profiles)."""
    _check_key(key, data)
    if data.get("offered", True) is not True:
        raise EngineInputError(f"profile {key!r} is not offered: {data.get('withheld_reason')}")
    known = PROFILES if known is None else known
    try:
        where = f"profile {key!r}"
        thresholds = _levels(data["thresholds"], f"{key} threshold")
        threshold_source = _text(data, "threshold_source", where)
        table, insider_source = _insider_table(key, data, known)
        semi = dict(data.get("semi_public_insider", {"controls": "low", "motives": "high"}))
        grading = data.get("levels_graded_by", "invasion_of_privacy")
        if grading not in GRADINGS:
            raise EngineInputError(f"{where}: 'levels_graded_by' must be one of {GRADINGS}")
        version, date = _edition(data, where)
        profile = Profile(
            key=key,
            name=_text(data, "name", where),
            source=_text(data, "source", where),
            thresholds=MappingProxyType(thresholds),
            cell_sizes=MappingProxyType({k: int(v) for k, v in data.get("cell_sizes", {}).items()}),
            threshold_source=threshold_source,
            insider_attack=MappingProxyType({c: MappingProxyType(r) for c, r in table.items()}),
            insider_attack_source=insider_source,
            semi_public_insider=MappingProxyType(semi),
            edition_version=version,
            edition_date=date,
            levels_graded_by=str(grading),
            read_from=_optional_text(data, "read_from", where),
            release_models=MappingProxyType(
                _release_rules(key, data, thresholds, threshold_source)
            ),
            notes=str(data.get("notes", "")),
        )
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise EngineInputError(f"profile {key!r} is incomplete: missing or bad {exc}") from exc
    if semi.get("controls") not in table or semi.get("motives") not in LEVELS:
        raise EngineInputError(
            f"profile {key!r}: semi_public_insider names no cell of its T1 table"
        )
    if set(profile.cell_sizes) - set(LEVELS):
        raise EngineInputError(f"profile {key!r}: cell sizes are given by level ({LEVELS})")
    return profile


def withheld_from_data(key: str, data: Mapping[str, Any]) -> WithheldProfile:
    """Validate a profile that is not offered: it must say why."""
    _check_key(key, data)
    where = f"profile {key!r}"
    if data.get("offered") is not False:
        raise EngineInputError(f'{where}: only a profile with "offered": false is withheld')
    version, date = _edition(data, where)
    return WithheldProfile(
        key=key,
        name=_text(data, "name", where),
        source=_text(data, "source", where),
        edition_version=version,
        edition_date=date,
        reason=_text(data, "withheld_reason", where),
    )


def preset_from_data(key: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a preset; returns its data with ``value`` computed (1/k for a class size)."""
    _check_key(key, data)
    where = f"preset {key!r}"
    if ("value" in data) == ("minimum_class_size" in data):
        raise EngineInputError(f"{where}: give either 'value' or 'minimum_class_size'")
    if "minimum_class_size" in data:
        k = data["minimum_class_size"]
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise EngineInputError(f"{where}: 'minimum_class_size' must be a whole number ≥ 1")
        value = 1 / k
    else:
        value = check_probability(data["value"], f"{where} value")
    if data.get("measure", "max") not in MEASURES:
        raise EngineInputError(f"{where}: 'measure' must be one of {', '.join(MEASURES)}")
    return {
        **dict(data),
        "name": _text(data, "name", where),
        "source": _text(data, "source", where),
        "value": value,
    }


def _json_files(directory: Traversable) -> list[Traversable]:
    return sorted(
        (p for p in directory.iterdir() if p.name.endswith(".json")), key=lambda p: p.name
    )


def _read(path: Traversable) -> dict[str, Any]:
    stem = path.name.removesuffix(".json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EngineInputError(f"threshold data {path.name}: not readable JSON ({exc})") from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise EngineInputError(
            f"threshold data {path.name}: must be an object with schema {SCHEMA}"
        )
    if data.get("key") != stem:
        raise EngineInputError(f"threshold data {path.name}: its key must be {stem!r}")
    return data


@dataclass(frozen=True)
class Loaded:
    profiles: dict[str, dict[str, Any]]
    withheld: dict[str, WithheldProfile]
    presets: dict[str, dict[str, Any]]


def load_directory(directory: Traversable = DATA_DIR) -> Loaded:
    """Read and validate every profile and preset file under ``directory``.

    Profiles that take their T1 table from another profile are validated after the ones
    they refer to, whatever the order of the files."""
    profiles: dict[str, dict[str, Any]] = {}
    withheld: dict[str, WithheldProfile] = {}
    for path in _json_files(directory / "profiles"):
        data = _read(path)
        key = path.name.removesuffix(".json")
        if data.get("offered", True) is False:
            withheld[key] = withheld_from_data(key, data)
        else:
            profiles[key] = data
    for key, data in profiles.items():
        try:
            profile_from_data(key, data, profiles)
        except EngineInputError as exc:
            raise EngineInputError(f"threshold data {key}.json: {exc}") from exc
    presets = {
        path.name.removesuffix(".json"): preset_from_data(
            path.name.removesuffix(".json"), _read(path)
        )
        for path in _json_files(directory / "presets")
    }
    if DEFAULT_PROFILE not in profiles:
        raise EngineInputError(f"threshold data: the default profile {DEFAULT_PROFILE} is missing")
    return Loaded(_in_order(profiles), withheld, _in_order(presets))


def _in_order(found: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """By the files' ``order`` (pages list them so), then by key."""
    ranked = sorted(found, key=lambda key: (_rank(found[key].get("order")), key))
    return {key: found[key] for key in ranked}


def _rank(order: Any) -> int:
    return order if isinstance(order, int) and not isinstance(order, bool) else 1_000


_LOADED = load_directory()
#: Offered profiles, as data (key → the file's content); `get_profile` validates them.
PROFILES: dict[str, dict[str, Any]] = _LOADED.profiles
#: Profiles known but not offered, with the reason.
WITHHELD: dict[str, WithheldProfile] = _LOADED.withheld
#: Single-value presets offered beside the profiles (METHOD step 3, "other presets").
PRESETS: dict[str, dict[str, Any]] = _LOADED.presets


def register_profile(key: str, data: Mapping[str, Any] | str) -> Profile:
    """Add (or replace) a profile from a dict or a JSON text, after validation."""
    raw: Mapping[str, Any] = json.loads(data) if isinstance(data, str) else data
    if key in WITHHELD:
        raise EngineInputError(f"profile {key!r} is withheld: {WITHHELD[key].reason}")
    profile = profile_from_data(key, raw)
    PROFILES[key] = dict(raw)
    return profile


def get_profile(key: str = DEFAULT_PROFILE) -> Profile:
    if key in WITHHELD:
        withheld = WITHHELD[key]
        raise EngineInputError(f"the {withheld.name} profile is not offered: {withheld.reason}")
    if key not in PROFILES:
        raise EngineInputError(f"unknown profile {key!r}: use one of {', '.join(PROFILES)}")
    return profile_from_data(key, PROFILES[key])
