#!/usr/bin/env python3
"""Checks the Grafana dashboard and the Prometheus rules in deploy/ against the metrics contract.

A dashboard that names a metric Trainyard does not expose shows "No data" and nobody notices
until it is needed, so every PromQL expression in the dashboard (panel queries and template
variable queries) and in the rule files may only use:
  - the metric names in tests/deploy/contract_metrics.txt (histograms with _bucket/_sum/_count),
  - the names recorded by deploy/prometheus/recording_rules.yml,
  - up, which Prometheus adds for every target.

It also checks the dashboard's shape: panel ids unique, every query on the ${DS_PROMETHEUS}
data source, the template variables the panels use defined. With --promql-out FILE it writes
every dashboard expression, Grafana variables replaced by sample values, as a recording-rule
file, so `promtool check rules FILE` can check their syntax with Prometheus' own parser.

Usage: check_dashboard.py REPO_ROOT [--promql-out FILE]
Exits 0 when all is well, 1 with one line per problem otherwise.
"""

import json
import re
import sys
from pathlib import Path

DASHBOARD = "deploy/grafana/trainyard-dashboard.json"
RECORDING_RULES = "deploy/prometheus/recording_rules.yml"
RULE_FILES = ["deploy/prometheus/recording_rules.yml", "deploy/prometheus/alert_rules.yml"]
CONTRACT = "tests/deploy/contract_metrics.txt"
DATASOURCE_UID = "${DS_PROMETHEUS}"

# Words PromQL reads as operators or modifiers rather than metric names.
KEYWORDS = {"and", "or", "unless", "offset", "bool", "by", "without", "on", "ignoring",
            "group_left", "group_right", "inf", "nan", "atan2"}


def contractNames(root):
    names = {"up"}
    for line in (root / CONTRACT).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, kind = line.split()
        names.add(name)
        if kind == "histogram":
            names.update(name + suffix for suffix in ("_bucket", "_sum", "_count"))
    return names


def recordedNames(root):
    # A regex instead of a YAML parser keeps the check free of Python packages; the rule files'
    # shape is fixed by promtool check rules, which runs first.
    text = (root / RECORDING_RULES).read_text()
    return set(re.findall(r"^\s*-?\s*record:\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*$", text, re.M))


def withSampleVariables(expr):
    """Replaces Grafana variables by values PromQL accepts, so Prometheus can parse the query."""
    expr = re.sub(r"\$\{?__(rate_interval|interval|range)\}?", "5m", expr)
    return re.sub(r"\$\{?[A-Za-z_][A-Za-z0-9_]*(:[a-z]+)?\}?", "x", expr)


def metricNames(expr):
    """The metric names a PromQL expression reads (the names that are neither functions,
    keywords, labels nor numbers)."""
    expr = withSampleVariables(expr)
    expr = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)  # strings
    expr = re.sub(r"\{[^}]*\}", "{}", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", "[]", expr)  # ranges and subqueries
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    names = set()
    for match in re.finditer(r"(?<![\w.:])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?", expr):
        word, call = match.group(1), match.group(2)
        if call or word.lower() in KEYWORDS:
            continue
        names.add(word)
    return names


def walkPanels(panels):
    for panel in panels:
        yield panel
        yield from walkPanels(panel.get("panels", []))


def dashboardQueries(dashboard, problems):
    """(where, expr) for every panel query and query variable."""
    queries = []
    for panel in walkPanels(dashboard.get("panels", [])):
        if panel.get("type") == "row":
            continue
        where = "panel %r" % panel.get("title")
        if panel.get("datasource", {}).get("uid") != DATASOURCE_UID:
            problems.append("%s: datasource is not %s" % (where, DATASOURCE_UID))
        targets = panel.get("targets", [])
        if not targets:
            problems.append("%s: no queries" % where)
        for target in targets:
            if target.get("datasource", {}).get("uid") != DATASOURCE_UID:
                problems.append("%s: query %s is not on %s" % (where, target.get("refId"),
                                                               DATASOURCE_UID))
            if not target.get("expr", "").strip():
                problems.append("%s: query %s has no expression" % (where, target.get("refId")))
                continue
            queries.append((where, target["expr"]))
    for var in dashboard.get("templating", {}).get("list", []):
        if var.get("type") != "query":
            continue
        query = var.get("query")
        query = query.get("query", "") if isinstance(query, dict) else query or ""
        where = "variable %r" % var.get("name")
        match = re.fullmatch(r"\s*label_values\(\s*(.*?)\s*,\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*",
                             query)
        if match:
            queries.append((where, match.group(1)))
        elif re.fullmatch(r"\s*query_result\((.*)\)\s*", query):
            queries.append((where, re.fullmatch(r"\s*query_result\((.*)\)\s*", query).group(1)))
        else:
            problems.append("%s: query %r is not label_values() or query_result()" % (where,
                                                                                       query))
    return queries


def checkVariables(dashboard, problems):
    defined = {v.get("name") for v in dashboard.get("templating", {}).get("list", [])}
    for required in ("DS_PROMETHEUS", "job"):
        if required not in defined:
            problems.append("template variable %r is missing" % required)
    used = set(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", json.dumps(dashboard)))
    for name in sorted(used - defined):
        if not name.startswith("__"):
            problems.append("template variable %r is used but not defined" % name)


def checkPanelIds(dashboard, problems):
    seen = set()
    for panel in walkPanels(dashboard.get("panels", [])):
        if panel.get("id") in seen:
            problems.append("panel id %r is used twice" % panel.get("id"))
        seen.add(panel.get("id"))


def ruleExpressions(root, problems):
    """(where, expr) for every rule, or nothing when PyYAML is not installed (promtool has
    already checked the files; this only adds the name check)."""
    try:
        import yaml
    except ImportError:
        print("note: PyYAML not installed, metric names in the rule files not checked")
        return []
    queries = []
    for path in RULE_FILES:
        for group in yaml.safe_load((root / path).read_text()).get("groups", []):
            for rule in group.get("rules", []):
                name = rule.get("record") or rule.get("alert")
                queries.append(("%s rule %s" % (path, name), str(rule.get("expr", ""))))
    return queries


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--promql-out"):
        print("usage: check_dashboard.py REPO_ROOT [--promql-out FILE]", file=sys.stderr)
        return 2
    root = Path(argv[1])
    problems = []
    dashboard = json.loads((root / DASHBOARD).read_text())
    if int(dashboard.get("schemaVersion", 0)) < 36:
        problems.append("schemaVersion %r is older than Grafana 9" % dashboard.get("schemaVersion"))
    checkPanelIds(dashboard, problems)
    checkVariables(dashboard, problems)
    panel_queries = dashboardQueries(dashboard, problems)

    known = contractNames(root) | recordedNames(root)
    for where, expr in panel_queries + ruleExpressions(root, problems):
        for name in sorted(metricNames(expr) - known):
            problems.append("%s: %r is neither in the metrics contract nor a recording rule "
                            "(expr: %s)" % (where, name, " ".join(expr.split())))

    if len(argv) == 4:
        # JSON is YAML, so promtool reads this as a rule file.
        rules = [{"record": "dashboard:query_%d" % i, "expr": withSampleVariables(expr)}
                 for i, (_, expr) in enumerate(panel_queries)]
        Path(argv[3]).write_text(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]},
                                            indent=1))

    for problem in problems:
        print("FAIL: " + problem)
    if problems:
        return 1
    print("dashboard: %d queries, all on contract or recorded metrics" % len(panel_queries))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
