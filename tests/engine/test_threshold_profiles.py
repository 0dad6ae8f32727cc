"""Threshold profiles as data files: each profile's values, tested with the source they come
from, and the one loader that reads, validates and withholds them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from apps.engine.errors import EngineInputError
from apps.engine.threshold import (
    DATA_DIR,
    PRESETS,
    PROFILES,
    WITHHELD,
    get_profile,
    load_directory,
    preset_threshold,
    register_profile,
    threshold_for,
)

# (profile, release model, level, value, measure, words of the source the value is read from)
TABLE = [
    # Ontario IPC 2016, step 3 table; measures from step 4.2.
    ("ontario_ipc_2016", "public", "low", 0.1, "max", "step 3"),
    ("ontario_ipc_2016", "public", "medium", 0.075, "max", "step 3"),
    ("ontario_ipc_2016", "public", "high", 0.05, "max", "step 3"),
    ("ontario_ipc_2016", "semi_public", "high", 0.05, "max", "step 3"),
    ("ontario_ipc_2016", "non_public", "low", 0.1, "strict_average", "step 3"),
    # PDPC 2018, 17.3 (thresholds by potential harm); 17.6: the smallest class, every model.
    ("pdpc_2018", "public", "low", 0.2, "max", "17.3"),
    ("pdpc_2018", "public", "medium", 0.1, "max", "17.3"),
    ("pdpc_2018", "non_public", "high", 0.01, "max", "17.3"),
    # El Emam & Arbuckle 2013, ch. 2, Table 2-1: public precedents 0.09 to 0.05.
    ("el_emam_2013", "public", "low", 0.09, "max", "0.09 to 0.05"),
    ("el_emam_2013", "public", "medium", 0.07, "max", "0.09 to 0.05"),
    ("el_emam_2013", "non_public", "high", 0.05, "strict_average", "0.09 to 0.05"),
    # EMA Policy 0070 external guidance v1.5 (and Health Canada): 0.09, public release.
    ("ema_policy_0070", "public", "low", 0.09, "max", "EMA/90915/2016 v1.5"),
    ("ema_policy_0070", "public", "high", 0.09, "max", "EMA/90915/2016 v1.5"),
    # ISO/IEC 27559:2022 as tabled in the IHE De-Identification Handbook.
    ("iso_iec_27559_2022", "public", "low", 0.1, "max", "IHE De-Identification Handbook"),
    ("iso_iec_27559_2022", "public", "medium", 0.075, "max", "IHE De-Identification Handbook"),
    ("iso_iec_27559_2022", "public", "high", 0.05, "max", "IHE De-Identification Handbook"),
    ("iso_iec_27559_2022", "non_public", "low", 0.1, "average", "non-public release: average"),
    ("iso_iec_27559_2022", "non_public", "medium", 0.075, "average", "non-public release"),
    ("iso_iec_27559_2022", "non_public", "high", 0.05, "average", "non-public release"),
]


@pytest.mark.parametrize(
    ("profile", "model", "level", "value", "measure", "cited"),
    TABLE,
    ids=[f"{p}-{m}-{lv}-{c}" for p, m, lv, _, _, c in TABLE],
)
def test_each_profile_value_with_its_source(
    profile: str, model: str, level: str, value: float, measure: str, cited: str
) -> None:
    chosen = threshold_for(level, profile, release_model=model)
    assert (chosen.value, chosen.measure, chosen.release_model) == (value, measure, model)
    assert cited in chosen.source


def test_every_offered_profile_says_its_edition_and_source() -> None:
    for key in PROFILES:
        profile = get_profile(key)
        assert profile.source and profile.threshold_source and profile.edition_date
        assert profile.release_models, key


def test_values_read_from_a_secondary_text_say_so() -> None:
    # The EMA value and the ISO table were read in the IHE handbook, not in the primary text.
    assert "IHE" in (get_profile("ema_policy_0070").read_from or "")
    assert "not read" in (get_profile("iso_iec_27559_2022").read_from or "")
    assert get_profile("ontario_ipc_2016").read_from is None  # seed 000 is the primary text


def test_the_ema_value_is_for_public_release_only() -> None:
    with pytest.raises(EngineInputError, match="sets no threshold for a non-public release"):
        threshold_for("low", "ema_policy_0070", release_model="non_public")
    with pytest.raises(EngineInputError, match="semi-public"):
        threshold_for("low", "ema_policy_0070", release_model="semi_public")
    assert threshold_for("high", "ema_policy_0070").minimum_class_size == 12  # 1/11 > 0.09


def test_profiles_without_their_own_t1_table_take_the_ipc_one_and_say_so() -> None:
    ipc = get_profile("ontario_ipc_2016").insider_attack
    for key in ("el_emam_2013", "ema_policy_0070", "iso_iec_27559_2022"):
        profile = get_profile(key)
        assert profile.insider_attack == ipc
        assert "Information and Privacy Commissioner of Ontario" in profile.insider_attack_source


def test_ipc_2025_is_known_but_not_offered() -> None:
    assert "ontario_ipc_2025" not in PROFILES
    assert "primary text" in WITHHELD["ontario_ipc_2025"].reason
    assert WITHHELD["ontario_ipc_2025"].edition_date == "2025-10-15"
    for use in (
        lambda: get_profile("ontario_ipc_2025"),
        lambda: threshold_for("low", "ontario_ipc_2025"),
        lambda: register_profile("ontario_ipc_2025", dict(PROFILES["ontario_ipc_2016"])),
    ):
        with pytest.raises(EngineInputError, match="not offered|withheld"):
            use()


def test_presets_from_their_files() -> None:
    assert preset_threshold("open_data_k11").value == 1 / 11  # exactly: stored as k = 11
    assert preset_threshold("clinical_trial_public").value == 0.09
    assert preset_threshold("el_emam_public_high").measure == "max"
    assert list(PRESETS)[0] == "open_data_k11"  # the files' order, as the pages list them


# --------------------------------------------------------------------------- the loader


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(DATA_DIR, target)
    return target


def _write(directory: Path, data: dict[str, object]) -> None:
    (directory / "profiles" / f"{data['key']}.json").write_text(json.dumps(data))


def test_a_new_edition_is_a_data_file(tmp_path: Path) -> None:
    directory = _copy(tmp_path)
    edition = json.loads((directory / "profiles" / "ontario_ipc_2025.json").read_text())
    edition.update(
        offered=True,
        thresholds={"low": 0.09, "medium": 0.06, "high": 0.04},
        threshold_source="IPC 2025, test table",
        release_models={"public": {"measure": "max"}, "non_public": {"measure": "average"}},
        insider_attack={"from_profile": "ontario_ipc_2016"},
        insider_attack_source="IPC 2016, step 5",
    )
    _write(directory, edition)
    loaded = load_directory(directory)
    assert "ontario_ipc_2025" in loaded.profiles and "ontario_ipc_2025" not in loaded.withheld
    assert loaded.profiles["ontario_ipc_2025"]["thresholds"]["medium"] == 0.06
    assert list(loaded.profiles)[0] == "ontario_ipc_2016"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"release_models": {"public": {"measure": "median"}}}, "'measure' must be one of"),
        ({"release_models": {"internal": {"measure": "max"}}}, "not one of public"),
        ({"thresholds": {"low": 0.1, "medium": 0.075}}, "must give a value|missing"),
        ({"thresholds": {"low": 0.1, "medium": 0.075, "high": 0.0}}, r"\(0, 1\]"),
        ({"insider_attack": {"from_profile": "atlantis"}}, "refers to 'atlantis'"),
        ({"edition": {"version": "x", "date": "15/10/2025"}}, "YYYY-MM-DD"),
        ({"levels_graded_by": "mood"}, "levels_graded_by"),
        ({"offered": False}, "withheld_reason"),
    ],
)
def test_the_loader_refuses_a_bad_file_naming_it(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    directory = _copy(tmp_path)
    data = {**json.loads((directory / "profiles" / "pdpc_2018.json").read_text()), **change}
    _write(directory, data)
    with pytest.raises(EngineInputError, match=message):
        load_directory(directory)


def test_the_loader_refuses_a_file_whose_key_is_not_its_name(tmp_path: Path) -> None:
    directory = _copy(tmp_path)
    data = json.loads((directory / "profiles" / "pdpc_2018.json").read_text())
    (directory / "profiles" / "pdpc_2019.json").write_text(json.dumps(data))
    with pytest.raises(EngineInputError, match=r"pdpc_2019\.json: its key must be"):
        load_directory(directory)


def test_the_loader_refuses_a_preset_with_two_values(tmp_path: Path) -> None:
    directory = _copy(tmp_path)
    path = directory / "presets" / "open_data_k11.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "value": 0.09}))
    with pytest.raises(EngineInputError, match="either 'value' or 'minimum_class_size'"):
        load_directory(directory)
