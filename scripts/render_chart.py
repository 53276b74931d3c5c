#!/usr/bin/env python3
"""Renders a Helm chart with Helm's own Go SDK (helm-python-sdk, from PyPI; no helm binary needed).

usage: render_chart.py CHART [VALUES.yaml] -> JSON list of the rendered objects on stdout; values that
values.schema.json rejects, or a template error, exit 1 with Helm's message on stderr.
"""
import json
import sys

import helm_python as helm
import yaml


def main() -> int:
    chart_dir = sys.argv[1]
    values = {}
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as f:
            values = yaml.safe_load(f) or {}
    with helm.Chart.load(chart_dir) as chart:
        try:
            chart.validate_schema(values)
            manifests = chart.render(values, name="fs", namespace="autoscaling")
        except Exception as e:  # Helm's error names the template or the values field
            print(e, file=sys.stderr)
            return 1
    objects = []
    for name in sorted(manifests):
        if not name.endswith((".yaml", ".yml")):
            continue
        for doc in yaml.safe_load_all(manifests[name]):
            if doc:
                objects.append({"template": name, "object": doc})
    json.dump(objects, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
