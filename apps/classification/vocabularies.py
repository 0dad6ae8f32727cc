"""Closed vocabularies whose values are quasi-identifiers, as data (Step 2 suggestions).

Calendar parts and places are what an adversary knows about a person (IPC Step 2 lists dates,
and where a person lives or was born), so a column whose values come from one of these lists
is a quasi-identifier whatever its name. Everything is compared after `normalized`: accents
removed, lower case, full stops dropped, hyphens and runs of spaces made one space ("B.C.",
"Colombie-Britannique", "févr." all match).

Abbreviations of two or three letters (`CODES_*`: "ON", "TX", "CAN") are compared in upper
case. They are ordinary words as often as codes ("on", "or", "me", "can"), so a column must
show at least two different ones to count (quasi_values: "on" and "off" is not Ontario).
"""

from __future__ import annotations

import re

from apps.engine.validators import strip_accents

__all__ = [
    "CANADIAN_PROVINCES",
    "CODES_CANADIAN_PROVINCES",
    "CODES_COUNTRIES",
    "CODES_US_STATES",
    "COUNTRIES",
    "MISSING_MARKERS",
    "MONTHS",
    "US_STATES",
    "WEEKDAYS",
    "normalized",
]

_SPACES = re.compile(r"[\s_-]+")


def normalized(value: str) -> str:
    """'Colombie-Britannique' → 'colombie britannique'; 'B.C.' → 'bc'; ' Févr. ' → 'fevr'."""
    text = strip_accents(value).lower().replace(".", "").replace("’", "'")
    return _SPACES.sub(" ", text).strip()


def _words(text: str) -> frozenset[str]:
    """A vocabulary from a comma-separated list, normalized."""
    return frozenset(normalized(w) for w in text.split(",") if w.strip())


def _codes(text: str) -> frozenset[str]:
    return frozenset(code.strip() for code in text.split(",") if code.strip())


# Codes that stand for "no value" in real extracts: not evidence either way, so left out of the
# share of values a vocabulary must reach ("Unknown" in 3 % of a month column).
MISSING_MARKERS = _words(
    "unknown, unk, not known, not reported, not stated, not specified, unspecified, "
    "not applicable, n/a, na, n a, none, null, nil, missing, blank, refused, declined, "
    "not available, other, others, all other, inconnu, inconnue, non disponible, nd, s o, so, "
    "sans objet, non precise, non precisee, non declare, autre, autres, refus, -, --, ?, "
    "not a fatality (not applicable), not a fatality (n/a)"
)

MONTHS = _words(
    "january, february, march, april, may, june, july, august, september, october, november, "
    "december, jan, feb, mar, apr, jun, jul, aug, sep, sept, oct, nov, dec, "
    "janvier, fevrier, mars, avril, mai, juin, juillet, aout, septembre, octobre, novembre, "
    "decembre, janv, fev, fevr, avr, juil"
)

WEEKDAYS = _words(
    "monday, tuesday, wednesday, thursday, friday, saturday, sunday, mon, tue, tues, wed, "
    "thu, thur, thurs, fri, sat, sun, lundi, mardi, mercredi, jeudi, vendredi, samedi, "
    "dimanche, lun, mer, jeu, ven, sam, dim"
)

US_STATES = _words(
    "alabama, alaska, arizona, arkansas, california, colorado, connecticut, delaware, "
    "district of columbia, washington dc, washington d c, florida, georgia, hawaii, idaho, "
    "illinois, indiana, iowa, kansas, kentucky, louisiana, maine, maryland, massachusetts, "
    "michigan, minnesota, mississippi, missouri, montana, nebraska, nevada, new hampshire, "
    "new jersey, new mexico, new york, north carolina, north dakota, ohio, oklahoma, oregon, "
    "pennsylvania, rhode island, south carolina, south dakota, tennessee, texas, utah, "
    "vermont, virginia, washington, west virginia, wisconsin, wyoming, puerto rico, guam, "
    "virgin islands, us virgin islands, american samoa, northern mariana islands"
)
# USPS abbreviations, with the territories.
CODES_US_STATES = _codes(
    "AL, AK, AZ, AR, CA, CO, CT, DE, DC, FL, GA, HI, ID, IL, IN, IA, KS, KY, LA, ME, MD, MA, "
    "MI, MN, MS, MO, MT, NE, NV, NH, NJ, NM, NY, NC, ND, OH, OK, OR, PA, RI, SC, SD, TN, TX, "
    "UT, VT, VA, WA, WV, WI, WY, PR, GU, VI, AS, MP"
)

CANADIAN_PROVINCES = _words(
    "ontario, quebec, british columbia, colombie britannique, alberta, manitoba, "
    "saskatchewan, nova scotia, nouvelle ecosse, new brunswick, nouveau brunswick, "
    "newfoundland and labrador, newfoundland & labrador, newfoundland, terre neuve et labrador, "
    "terre neuve, prince edward island, ile du prince edouard, yukon, yukon territory, "
    "northwest territories, territoires du nord ouest, nunavut, "
    # Older and written abbreviations, with their full stops dropped by `normalized`.
    "ont, que, bc, alta, sask, ns, nb, nfld, pei, nwt, yt, nt, nu"
)
# Canada Post abbreviations, and the older PQ, NF and YK.
CODES_CANADIAN_PROVINCES = _codes("ON, QC, BC, AB, MB, SK, NS, NB, NL, PE, YT, NT, NU, PQ, NF, YK")

COUNTRIES = _words(
    # English short names, with the usual variants.
    "afghanistan, albania, algeria, andorra, angola, antigua and barbuda, argentina, armenia, "
    "australia, austria, azerbaijan, bahamas, the bahamas, bahrain, bangladesh, barbados, "
    "belarus, belgium, belize, benin, bhutan, bolivia, bosnia and herzegovina, botswana, "
    "brazil, brunei, brunei darussalam, bulgaria, burkina faso, burundi, cabo verde, "
    "cape verde, cambodia, cameroon, canada, central african republic, chad, chile, china, "
    "people's republic of china, colombia, comoros, congo, republic of the congo, "
    "democratic republic of the congo, dr congo, drc, costa rica, cote d'ivoire, ivory coast, "
    "croatia, cuba, cyprus, czechia, czech republic, denmark, djibouti, dominica, "
    "dominican republic, ecuador, egypt, el salvador, equatorial guinea, eritrea, estonia, "
    "eswatini, swaziland, ethiopia, fiji, finland, france, gabon, gambia, the gambia, "
    "georgia, germany, ghana, greece, grenada, guatemala, guinea, guinea bissau, guyana, "
    "haiti, honduras, hungary, iceland, india, indonesia, iran, iraq, ireland, israel, italy, "
    "jamaica, japan, jordan, kazakhstan, kenya, kiribati, korea, south korea, "
    "republic of korea, north korea, kosovo, kuwait, kyrgyzstan, laos, lao pdr, latvia, "
    "lebanon, lesotho, liberia, libya, liechtenstein, lithuania, luxembourg, madagascar, "
    "malawi, malaysia, maldives, mali, malta, marshall islands, mauritania, mauritius, "
    "mexico, micronesia, moldova, monaco, mongolia, montenegro, morocco, mozambique, "
    "myanmar, burma, namibia, nauru, nepal, netherlands, the netherlands, holland, "
    "new zealand, nicaragua, niger, nigeria, north macedonia, macedonia, norway, oman, "
    "pakistan, palau, palestine, panama, papua new guinea, paraguay, peru, philippines, "
    "poland, portugal, qatar, romania, russia, russian federation, rwanda, "
    "saint kitts and nevis, saint lucia, saint vincent and the grenadines, samoa, "
    "san marino, sao tome and principe, saudi arabia, senegal, serbia, seychelles, "
    "sierra leone, singapore, slovakia, slovenia, solomon islands, somalia, south africa, "
    "south sudan, spain, sri lanka, sudan, suriname, sweden, switzerland, syria, taiwan, "
    "tajikistan, tanzania, thailand, timor leste, east timor, togo, tonga, "
    "trinidad and tobago, tunisia, turkey, turkiye, turkmenistan, tuvalu, uganda, ukraine, "
    "united arab emirates, uae, united kingdom, uk, great britain, england, scotland, wales, "
    "northern ireland, united states, united states of america, usa, us, u s a, america, "
    "uruguay, uzbekistan, vanuatu, vatican, holy see, venezuela, vietnam, viet nam, yemen, "
    "zambia, zimbabwe, hong kong, macao, macau, puerto rico, greenland, "
    "west indies, yugoslavia, ussr, soviet union, czechoslovakia, "
    # French names that differ from the English ones.
    "afrique du sud, albanie, algerie, allemagne, andorre, angleterre, arabie saoudite, "
    "argentine, armenie, australie, autriche, azerbaidjan, belgique, bielorussie, birmanie, "
    "bolivie, bosnie herzegovine, bresil, bulgarie, cambodge, cameroun, cap vert, chili, "
    "chine, chypre, colombie, comores, coree, coree du sud, coree du nord, croatie, danemark, "
    "egypte, emirats arabes unis, equateur, erythree, espagne, estonie, etats unis, "
    "etats unis d'amerique, ethiopie, finlande, gambie, georgie, grece, grenade, guinee, "
    "guinee equatoriale, haiti, hongrie, inde, indonesie, irak, irlande, islande, israel, "
    "italie, jamaique, japon, jordanie, kirghizistan, koweit, lettonie, liban, libye, "
    "lituanie, malaisie, maroc, maurice, mauritanie, mexique, moldavie, mongolie, "
    "mozambique, namibie, norvege, nouvelle zelande, ouganda, ouzbekistan, pays bas, perou, "
    "pologne, roumanie, royaume uni, russie, republique centrafricaine, "
    "republique dominicaine, republique tcheque, tchequie, republique democratique du congo, "
    "senegal, serbie, singapour, slovaquie, slovenie, somalie, soudan, suede, suisse, "
    "syrie, tadjikistan, tanzanie, tchad, thailande, tunisie, turquie, turkmenistan, "
    "venezuela, yemen, zambie"
)
# ISO 3166-1 alpha-3 and alpha-2 codes of countries (and of a few territories), with "UK".
CODES_COUNTRIES = _codes(
    "AFG, ALB, DZA, AND, AGO, ATG, ARG, ARM, AUS, AUT, AZE, BHS, BHR, BGD, BRB, BLR, BEL, BLZ, "
    "BEN, BTN, BOL, BIH, BWA, BRA, BRN, BGR, BFA, BDI, CPV, KHM, CMR, CAN, CAF, TCD, CHL, CHN, "
    "COL, COM, COG, COD, CRI, CIV, HRV, CUB, CYP, CZE, DNK, DJI, DMA, DOM, ECU, EGY, SLV, GNQ, "
    "ERI, EST, SWZ, ETH, FJI, FIN, FRA, GAB, GMB, GEO, DEU, GHA, GRC, GRD, GTM, GIN, GNB, GUY, "
    "HTI, HND, HUN, ISL, IND, IDN, IRN, IRQ, IRL, ISR, ITA, JAM, JPN, JOR, KAZ, KEN, KIR, PRK, "
    "KOR, KWT, KGZ, LAO, LVA, LBN, LSO, LBR, LBY, LIE, LTU, LUX, MDG, MWI, MYS, MDV, MLI, MLT, "
    "MHL, MRT, MUS, MEX, FSM, MDA, MCO, MNG, MNE, MAR, MOZ, MMR, NAM, NRU, NPL, NLD, NZL, NIC, "
    "NER, NGA, MKD, NOR, OMN, PAK, PLW, PSE, PAN, PNG, PRY, PER, PHL, POL, PRT, QAT, ROU, RUS, "
    "RWA, KNA, LCA, VCT, WSM, SMR, STP, SAU, SEN, SRB, SYC, SLE, SGP, SVK, SVN, SLB, SOM, ZAF, "
    "SSD, ESP, LKA, SDN, SUR, SWE, CHE, SYR, TWN, TJK, TZA, THA, TLS, TGO, TON, TTO, TUN, TUR, "
    "TKM, TUV, UGA, UKR, ARE, GBR, USA, URY, UZB, VUT, VAT, VEN, VNM, YEM, ZMB, ZWE, HKG, MAC, "
    "PRI, GRL, "
    "AF, AO, AR, AT, AU, BA, BD, BF, BG, BH, BI, BJ, BO, BR, BS, BT, BW, BY, BZ, CD, CF, CG, CH, "
    "CI, CL, CM, CN, CR, CU, CV, CY, CZ, DJ, DK, DM, DO, DZ, EC, EE, EG, ER, ES, ET, FI, FJ, FM, "
    "FR, GB, GD, GH, GM, GN, GQ, GR, GT, GW, GY, HK, HN, HR, HT, HU, IE, IQ, IR, IS, IT, JM, JO, "
    "JP, KE, KG, KH, KM, KN, KP, KR, KW, KZ, LB, LC, LI, LK, LR, LS, LT, LU, LV, LY, MA, MC, MG, "
    "MK, ML, MM, MR, MU, MV, MW, MX, MY, MZ, NA, NG, NI, NL, NO, NP, NZ, OM, PG, PH, PK, PL, PS, "
    "PT, PW, PY, QA, RO, RS, RU, RW, SA, SB, SE, SG, SI, SK, SL, SN, SO, SR, SS, ST, SV, SY, SZ, "
    "TG, TH, TJ, TL, TM, TN, TO, TR, TT, TV, TW, TZ, UA, UG, UK, US, UY, UZ, VC, VE, VN, VU, WS, "
    "YE, ZA, ZM, ZW, AD, AE, AG, AL, AM, AZ, BB, BE, BN, CA, CO, DE, GA, GE, ID, IL, IN, KI, LA, "
    "MD, ME, MH, MN, MT, NE, NR, PA, PE, SC, SD, SM, TD, VA"
)
