# Config checks before anything else: values from `--config KEY=VALUE` typed like
# the YAML of a config file, then the schema, with one line per error naming the key.


import re

import jsonschema
import yaml
from snakemake.exceptions import WorkflowError

_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def typed(value):
    """``value`` with numeric, boolean and null strings read as YAML would.

    `--config sizes='{default: [30]}'` reaches the config as {'default': ['30']}
    (Snakemake reads nested override values as strings); this turns '30' into 30,
    'true' into True and 'null' into None. Other strings, 'none' (a scaling) among
    them, stay as they are.
    """
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    if isinstance(value, str):
        text = value.strip()
        if text in ("true", "True", "false", "False"):
            return text.lower() == "true"
        if text in ("null", "~"):
            return None
        if _NUMBER.fullmatch(text):
            number = float(text)
            return int(text) if re.fullmatch(r"[+-]?\d+", text) else number
    return value


def check_schema(config, schema_path):
    """Every schema violation as one line: the key's dotted path and the reason."""
    with open(schema_path) as handle:
        schema = yaml.safe_load(handle)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(
        validator.iter_errors(config), key=lambda e: [str(p) for p in e.path]
    )
    if errors:
        lines = [
            f"config key '{'.'.join(map(str, e.absolute_path)) or '(top level)'}': {e.message}"
            for e in errors
        ]
        raise WorkflowError(
            "invalid config (keys and defaults: config/schema.yaml, docs/workflow.md):\n  "
            + "\n  ".join(lines)
        )
