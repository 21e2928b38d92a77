#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Generates charts/neighborly/README.md and values.schema.json from values.yaml.

helm-docs is not available here, so this does the part of it we need: every
key of values.yaml must carry a `# --` comment (the description, continued on
the following `#` lines); optional `# @schema {json}` lines refine the JSON
schema inferred from the default value. Mappings become objects with
`additionalProperties: false`, so Helm refuses values the chart does not know.

Usage:
  scripts/chart-docs.py            # rewrite README.md and values.schema.json
  scripts/chart-docs.py --check    # exit 1 (with a diff) if either is stale
"""

import argparse
import difflib
import json
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHART = os.path.join(ROOT, "charts", "neighborly")

KEY_RE = re.compile(r"^(\s*)([A-Za-z0-9_.-]+):(\s|$)")
DOC_RE = re.compile(r"^\s*# -- ?(.*)$")
SCHEMA_RE = re.compile(r"^\s*# @schema (.*)$")
CONT_RE = re.compile(r"^\s*#(?: (.*))?$")

QUANTITY_MAP = {
    "type": "object",
    "additionalProperties": {"type": ["string", "number"]},
}
DEFINITIONS = {
    "resources": {
        "type": "object",
        "description": "Kubernetes container resources.",
        "additionalProperties": False,
        "properties": {
            "requests": QUANTITY_MAP,
            "limits": QUANTITY_MAP,
            "claims": {"type": "array", "items": {"type": "object"}},
        },
    }
}


class DocError(Exception):
    pass


def lookup(data, path):
    """Returns (True, value) when path walks through mappings only."""
    node = data
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False, None
        node = node[key]
    return True, node


def parse_comments(text, data):
    """Maps key path tuples to {"doc": str, "schema": dict, "line": int}."""
    docs = {}
    stack = []  # (indent, key)
    doc_lines = None
    schema = {}
    in_doc = False
    for lineno, line in enumerate(text.splitlines(), start=1):
        m = DOC_RE.match(line)
        if m:
            doc_lines, schema, in_doc = [m.group(1).strip()], {}, True
            continue
        m = SCHEMA_RE.match(line)
        if m:
            try:
                schema.update(json.loads(m.group(1)))
            except json.JSONDecodeError as e:
                raise DocError(f"values.yaml:{lineno}: bad @schema JSON: {e}")
            in_doc = False
            continue
        m = CONT_RE.match(line)
        if m and line.strip().startswith("#"):
            if in_doc and doc_lines is not None:
                doc_lines.append((m.group(1) or "").strip())
            continue
        in_doc = False
        m = KEY_RE.match(line)
        if not m:
            continue
        indent, key = len(m.group(1)), m.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = tuple(k for _, k in stack) + (key,)
        ok, _ = lookup(data, path)
        if not ok:  # a key inside a list item: part of a default, not a value
            continue
        stack.append((indent, key))
        if doc_lines is not None:
            docs[path] = {"doc": " ".join(l for l in doc_lines if l).strip(),
                          "schema": schema, "line": lineno}
        elif path not in docs:
            docs[path] = {"doc": "", "schema": {}, "line": lineno}
        doc_lines, schema = None, {}
    return docs


def scalar_type(value):
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    raise DocError(f"unsupported default {value!r}")


def infer(value, path, docs):
    info = docs.get(path, {"doc": "", "schema": {}})
    hint = info["schema"]
    if "$ref" in hint:
        out = {"$ref": hint["$ref"]}
    elif isinstance(value, dict) and is_map(hint):
        out = {"type": "object"}  # a map: its keys are data, typed by the hint
    elif isinstance(value, dict) and value:
        out = {"type": "object", "additionalProperties": False, "properties": {}}
        for k, v in value.items():
            out["properties"][k] = infer(v, path + (k,), docs)
    elif isinstance(value, dict):
        out = {"type": "object"}
    elif isinstance(value, list):
        out = {"type": "array"}
        if value and not isinstance(value[0], dict):
            out["items"] = {"type": scalar_type(value[0])}
        else:
            out["items"] = {"type": "object"}
    else:
        out = {"type": scalar_type(value)}
    if "enum" in hint:
        out.pop("type", None)
    for k, v in hint.items():
        if k != "$ref":
            out[k] = v
    if info["doc"] and "$ref" not in out:
        out = {"description": info["doc"], **out}
    return out


def build_schema(data, docs):
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Values of the neighborly Helm chart",
        "type": "object",
        "additionalProperties": False,
        "definitions": DEFINITIONS,
        "properties": {},
    }
    for k, v in data.items():
        schema["properties"][k] = infer(v, (k,), docs)
    # Helm passes `global` to every chart, parent or not.
    schema["properties"]["global"] = {"type": "object"}
    return schema


def is_map(hint):
    """A mapping whose keys are data (`# @schema {"additionalProperties": {...}}`)."""
    return isinstance(hint.get("additionalProperties"), dict)


def walk_keys(data, docs, path=()):
    """Yields (path, value) for every key; a `$ref` value or a map is documented whole."""
    for k, v in data.items():
        yield path + (k,), v
        hint = docs.get(path + (k,), {}).get("schema", {})
        if isinstance(v, dict) and "$ref" not in hint and not is_map(hint):
            yield from walk_keys(v, docs, path + (k,))


def fmt_default(value, hint):
    if isinstance(value, dict) and value and "$ref" not in hint and not is_map(hint):
        return ""
    text = json.dumps(value, separators=(", ", ": "))
    return f"`{text}`"


def type_name(value, hint):
    if "enum" in hint:
        return "enum"
    if "$ref" in hint:
        return hint["$ref"].rsplit("/", 1)[-1]
    if "type" in hint:
        t = hint["type"]
        return " or ".join(t) if isinstance(t, list) else t
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "list"
    return {"boolean": "bool", "integer": "int", "number": "float",
            "string": "string", "null": "null"}[scalar_type(value)]


def build_readme(data, docs):
    with open(os.path.join(CHART, "README.md.tmpl"), encoding="utf-8") as f:
        template = f.read()
    rows = ["| Key | Type | Default | Description |",
            "|-----|------|---------|-------------|"]
    for path, value in walk_keys(data, docs):
        info = docs[path]
        desc = info["doc"].replace("|", "\\|")
        if "enum" in info["schema"]:
            desc += " One of: " + ", ".join(f"`{e}`" for e in info["schema"]["enum"]) + "."
        rows.append(f"| `{'.'.join(path)}` | {type_name(value, info['schema'])} | "
                    f"{fmt_default(value, info['schema'])} | {desc} |")
    marker = "{{VALUES_TABLE}}"
    if marker not in template:
        raise DocError(f"README.md.tmpl lacks the {marker} marker")
    return template.replace(marker, "\n".join(rows))


def generate():
    with open(os.path.join(CHART, "values.yaml"), encoding="utf-8") as f:
        text = f.read()
    data = yaml.safe_load(text)
    docs = parse_comments(text, data)
    missing = [".".join(p) for p, _ in walk_keys(data, docs) if not docs.get(p, {}).get("doc")]
    if missing:
        raise DocError("values.yaml keys without a `# --` comment: " + ", ".join(missing))
    schema = json.dumps(build_schema(data, docs), indent=2) + "\n"
    readme = build_readme(data, docs)
    return {"values.schema.json": schema, "README.md": readme}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="fail if the generated files differ from the committed ones")
    args = parser.parse_args()
    try:
        outputs = generate()
    except (DocError, yaml.YAMLError, OSError) as e:
        print(f"chart-docs: {e}", file=sys.stderr)
        return 1
    stale = False
    for name, content in outputs.items():
        path = os.path.join(CHART, name)
        current = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        if current == content:
            continue
        if args.check:
            stale = True
            print(f"chart-docs: charts/neighborly/{name} is out of date; "
                  "run scripts/chart-docs.py", file=sys.stderr)
            sys.stderr.writelines(difflib.unified_diff(
                current.splitlines(True), content.splitlines(True),
                f"a/{name}", f"b/{name}", n=1))
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(content)
            print(f"chart-docs: wrote charts/neighborly/{name}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
