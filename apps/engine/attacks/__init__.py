"""Attack tests on a release: singling out, linkability and inference, against a control.

Why.  ISO/IEC 27559 asks for adversarial testing of a release, the UK ICO (2025) for the
motivated-intruder test with singling out, linkability and inference as its indicators,
NIST SP 800-188 for re-identification studies.  The three criteria are the Article 29
Working Party's (Opinion 05/2014 on anonymisation techniques, WP216, 10 April 2014: the
criteria by which it judges every technique): can a person still be *singled out*,
can records about them be *linked*, can information about them be *inferred*?  This
package turns each into a test an intruder would actually run, from classic record
linkage (Fellegi & Sunter 1969; distance-based linkage as statistical disclosure control
measures it: Pagliuca & Seri 1999, Domingo-Ferrer & Torra 2001): the intruder holds a
person's original quasi-identifiers (a voters' list, a registry), knows how the release
generalized them (the recipient summary publishes it), and matches.

The attacks (neighbours.py finds the candidates, measures.py scores them):

* **Singling out** — the person's description (their quasi-identifiers as released)
  matches exactly one released record.
* **Linkability** — the record the intruder links the person to is the person's own.
  *Exact match*: a pick among the records agreeing on every quasi-identifier (none: no
  link).  *Nearest match*: a pick among the closest records (fewest disagreeing
  categories, then nearest numbers), which reaches perturbed values.  The score is the
  chance that the pick is right (1/f in a class of f): averaged over people in a
  generalized release it equals the release's average risk (METHOD step 4).
* **Inference** — the most frequent value of a sensitive variable among the person's
  candidates is the person's (numbers: the same decile of the released values).

Each is reported three ways, with 95 % Wilson intervals (stats.py), the number of
attacks, the seed and the method's version (model.py):

* **attack** — success on an *attack sample* of people from the original data;
* **control** — success on a *control sample*, held back: people whose records did not
  shape the release.  How they are held back depends on the release:

  - *a release derived row by row* (generalization, suppression, masking, the Step 7
    techniques): the release was made from everyone, so the control is counterfactual.
    Each control person is attacked on the release as it would be had they not been in
    the data: the same labels and the same suppressed classes, their own record taken
    out (leave-one-out).  What the intruder still achieves on them comes from patterns
    the release shares with everyone (a class where everybody has the same diagnosis
    tells it of anyone who falls in the class, in the data or not); what the attack
    sample achieves beyond it is what the release gives away about the people in it.
    A control person has no record of their own left, so their linkability is zero by
    design: it is computed, not assumed, and would show a release that leaks them.
    Taking one person out of a small class changes it (a pair becomes a single record;
    a 5/5 split becomes 4/5 against the person's own value): in small classes the
    control is what a person really faces once out of the data, and may fall below the
    naive baseline.
  - *synthetic data*: the generator learnt from a training part only; the control part
    was held back before fitting (techniques/synthetic).  Training people are the attack
    sample, held-back people the control, both attacked on the synthetic records as they
    are.  A synthetic record is nobody's: a person's "own record" is a synthetic record
    equal to them on every column, a copy.

  A control estimates what an attacker achieves without the person's data, the way a
  held-out set estimates what a model knows beyond its training (the holdout idea of
  Platzer & Reutterer 2021 for synthetic data); the gap attack − control carries
  Newcombe's interval.
* **naive baseline** — an intruder who knows nothing of the person: a description drawn
  from the release's own distributions (singling out), a record picked at random
  (linkability), the release's most frequent sensitive value (inference).

Not used, on purpose: the ``anonymeter`` package and its method (patent application
US 2023/0401336; the package also pins numpy below 2).  Its risk formula, its predicate
generation and its split-column linkage are not reproduced here.

Cost.  The release is read once per variable into its distinct quasi-identifier tuples
(a streaming group-by: memory follows the number of classes, not of rows).  Targets are
a bounded sample: ``DEFAULT_TARGETS`` (1,000) for the attack and as many for the control
(at most half the rows each), so the matching is linear in the number of distinct
released tuples.  The same seed gives the same report.

API for the wizard (after Step 7's apply; Step 8, the review and both reports show it):

    QuasiIdentifier(column, labels=None)            labels: original value → released label
    QuasiIdentifier.from_hierarchy(hierarchy, level)  the apply step's own mapping
    attack_release(original, released, *, quasi, sensitive=(), seed=None,
                   targets=DEFAULT_TARGETS, aligned=False, blank_is_wildcard=False)
        -> AttackReport        a written release (shuffled) or, aligned, a technique's
                               output row by row (perturbed values, blanked cells)
    attack_synthetic(training, control, synthetic, *, known, sensitive, seed=None,
                     targets=DEFAULT_TARGETS, bins=20) -> AttackReport
    AttackReport: method, method_version, seed, release_kind, design (plain words),
        original_rows, release_rows, released_tuples, targets, quasi, sensitive,
        results: AttackResult(criterion, variant, question, attacks, attack, control,
        baseline: Rate(successes, trials, rate, low, high), advantage: Difference);
        .result(criterion, variant), .to_dict() for the JSON twin
    wilson(successes, trials), rate(...), difference(first, second)
    attack_persons(seen, released, *, power, sensitive=(), seen_rows=None,
                   released_rows=None, seed, targets=DEFAULT_TARGETS)
        -> PersonAttackReport  person-keyed data, counted in persons (persons.py)
"""

from apps.engine.attacks.model import (
    DEFAULT_TARGETS,
    EXACT,
    INFERENCE,
    LINKABILITY,
    METHOD,
    METHOD_VERSION,
    NEAREST,
    SINGLING_OUT,
    AttackReport,
    AttackResult,
)
from apps.engine.attacks.persons import PersonAttackReport, attack_persons, person_scores
from apps.engine.attacks.release import attack_release
from apps.engine.attacks.stats import Difference, Rate, difference, rate, wilson
from apps.engine.attacks.synthetic import attack_synthetic
from apps.engine.attacks.view import QuasiIdentifier

__all__ = [
    "DEFAULT_TARGETS",
    "EXACT",
    "INFERENCE",
    "LINKABILITY",
    "METHOD",
    "METHOD_VERSION",
    "NEAREST",
    "SINGLING_OUT",
    "AttackReport",
    "AttackResult",
    "PersonAttackReport",
    "Difference",
    "QuasiIdentifier",
    "Rate",
    "attack_persons",
    "attack_release",
    "attack_synthetic",
    "difference",
    "person_scores",
    "rate",
    "wilson",
]
