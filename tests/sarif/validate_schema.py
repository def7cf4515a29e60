"""Validates a SARIF log against the SARIF 2.1.0 JSON schema with python3-jsonschema.

Usage: validate_schema.py SCHEMA SARIF  -> exit 0 if valid, 1 with the errors listed.
"""
import json
import sys

import jsonschema

schema = json.load(open(sys.argv[1], encoding="utf-8-sig"))
log = json.load(open(sys.argv[2], encoding="utf-8"))
validator_class = jsonschema.validators.validator_for(schema)
validator_class.check_schema(schema)
errors = sorted(validator_class(schema).iter_errors(log), key=lambda e: list(e.path))
for e in errors[:20]:
    print("sarif schema: /" + "/".join(map(str, e.path)) + ": " + e.message[:300])
sys.exit(1 if errors else 0)
