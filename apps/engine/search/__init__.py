"""Globally optimal de-identification search (METHOD.md Steps 7-8).

Public API: :func:`optimal_search`, :func:`exhaustive_search`, :class:`SearchResult`,
:class:`NodeResult`, :class:`SearchProblem` with :func:`build_problem` and
:func:`problem_from_encoded`.
"""

from apps.engine.search.evaluate import NodeResult
from apps.engine.search.exhaustive import exhaustive_search
from apps.engine.search.optimal import SearchResult, optimal_search
from apps.engine.search.problem import SearchProblem, build_problem, problem_from_encoded

__all__ = [
    "NodeResult",
    "SearchProblem",
    "SearchResult",
    "build_problem",
    "exhaustive_search",
    "optimal_search",
    "problem_from_encoded",
]
