"""The cluster path through the wizard: the Spark Connect servers of the engine's tests
(Sail, and Apache Spark in local mode for the smoke test)."""

from tests.engine.spark.conftest import sail_remote, spark_remote, spark_server  # noqa: F401  (fixtures)
