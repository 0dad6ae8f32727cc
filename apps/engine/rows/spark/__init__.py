"""The Spark engine of the row passes (Spark Connect); see apps.engine.rows."""
