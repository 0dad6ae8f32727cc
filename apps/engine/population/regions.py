"""Population sizes to pick from: census counts, and ARX's presets for comparison.

Data, not code: each region has a key (what `--population-region` and the wizard
store), a name, the number of people, the year and the source.  ARX's presets are kept
under ARX's names with ARX's figures so that results can be checked against ARX; ARX
states no source or year for them.  To add a region, add a line.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.engine.errors import EngineInputError

_STATCAN_2021 = "Statistics Canada, 2021 Census of Population (population count, 11 May 2021)"
_ARX = "ARX 3.9 preset (ARXPopulationModel.Region); ARX states no source or year"


@dataclass(frozen=True)
class Region:
    key: str
    name: str
    size: int
    year: int | None
    source: str
    group: str  # "census" or "arx"

    def to_dict(self) -> dict[str, object]:
        return {
            "key": self.key,
            "name": self.name,
            "size": self.size,
            "year": self.year,
            "source": self.source,
        }


def _census(key: str, name: str, size: int, year: int, source: str) -> Region:
    return Region(key, name, size, year, source, "census")


def _arx(key: str, name: str, size: int) -> Region:
    return Region(key, f"{name} (ARX preset)", size, None, _ARX, "arx")


REGIONS: tuple[Region, ...] = (
    _census("canada-2021", "Canada", 36_991_981, 2021, _STATCAN_2021),
    _census("ontario", "Ontario", 14_223_942, 2021, _STATCAN_2021),
    _census("quebec", "Quebec", 8_501_833, 2021, _STATCAN_2021),
    _census("british-columbia", "British Columbia", 5_000_879, 2021, _STATCAN_2021),
    _census("alberta", "Alberta", 4_262_635, 2021, _STATCAN_2021),
    _census("manitoba", "Manitoba", 1_342_153, 2021, _STATCAN_2021),
    _census("saskatchewan", "Saskatchewan", 1_132_505, 2021, _STATCAN_2021),
    _census("nova-scotia", "Nova Scotia", 969_383, 2021, _STATCAN_2021),
    _census("new-brunswick", "New Brunswick", 775_610, 2021, _STATCAN_2021),
    _census("newfoundland-and-labrador", "Newfoundland and Labrador", 510_550, 2021, _STATCAN_2021),
    _census("prince-edward-island", "Prince Edward Island", 154_331, 2021, _STATCAN_2021),
    _census("northwest-territories", "Northwest Territories", 41_070, 2021, _STATCAN_2021),
    _census("yukon", "Yukon", 40_232, 2021, _STATCAN_2021),
    _census("nunavut", "Nunavut", 36_858, 2021, _STATCAN_2021),
    _census(
        "usa-2020",
        "United States",
        331_449_281,
        2020,
        "U.S. Census Bureau, 2020 Census (resident population, 1 April 2020)",
    ),
    _census(
        "uk-2021",
        "United Kingdom",
        67_026_292,
        2021,
        "Office for National Statistics, mid-2021 population estimates for the UK",
    ),
    _census(
        "england-and-wales-2021",
        "England and Wales",
        59_597_542,
        2021,
        "Office for National Statistics, Census 2021 (usual residents, 21 March 2021)",
    ),
    _census(
        "singapore",
        "Singapore",
        5_685_807,
        2020,
        "Department of Statistics Singapore, Census of Population 2020 (total population)",
    ),
    _census(
        "australia-2021",
        "Australia",
        25_422_788,
        2021,
        "Australian Bureau of Statistics, 2021 Census (people counted, 10 August 2021)",
    ),
    _arx("usa", "USA", 317_238_626),
    _arx("canada", "Canada", 34_834_841),
    _arx("uk", "UK", 63_705_000),
    _arx("australia", "Australia", 23_130_900),
    _arx("france", "France", 65_820_916),
    _arx("germany", "Germany", 80_767_000),
    _arx("brasil", "Brasil", 202_656_788),
    _arx("china", "China (PRC)", 1_366_040_000),
    _arx("india", "India", 1_210_569_573),
    _arx("european-union", "European Union", 507_420_000),
    _arx("europe", "Europe", 740_000_000),
    _arx("north-america", "North America", 565_265_000),
    _arx("south-america", "South America", 385_742_554),
    _arx("africa", "Africa", 1_100_000_000),
)

_BY_KEY = {region.key: region for region in REGIONS}


def _fold(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def get_region(name: str) -> Region:
    """A region by key, else by name, ignoring case, spaces and punctuation.

    Keys win: "USA" and "Canada" are ARX's presets, "usa-2020" and "canada-2021" the
    census counts, "Ontario" the 2021 census.
    """
    wanted = _fold(name)
    for field in ("key", "name"):
        for region in REGIONS:
            if _fold(getattr(region, field)) == wanted:
                return region
    raise EngineInputError(
        f"unknown population region {name!r}: use one of {', '.join(r.key for r in REGIONS)}"
    )
