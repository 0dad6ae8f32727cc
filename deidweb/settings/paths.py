"""Where deidweb keeps its files: the checkout, and var/ for everything it writes."""

from pathlib import Path

from .env import env_str

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(env_str("DEIDWEB_VAR_DIR", str(BASE_DIR / "var")))
