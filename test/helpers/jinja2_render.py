#!/usr/bin/env python3
"""Renders chat templates with Python's Jinja2 the way transformers' apply_chat_template does, as the
reference the daemon's renderer is compared with (test/unit/jinja-differential.test.ts).

The environment mirrors transformers' _compile_jinja_template: ImmutableSandboxedEnvironment with
trim_blocks and lstrip_blocks, the loopcontrols extension, a {% generation %} block that renders its
body, tojson as json.dumps with ensure_ascii=False, and the raise_exception and strftime_now globals.
strftime_now reads a fixed clock (`now_ms`, local time) so both renderers see the same date.

stdin: {"now_ms": <epoch ms>, "jobs": [{"template": str, "context": {...}}, ...]}
stdout: [{"ok": str} | {"error": str}, ...] in job order.
"""
import json
import sys
from datetime import datetime

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationBlock(Extension):
    """transformers' AssistantTracker without the tracking: {% generation %}body{% endgeneration %} is body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def make_env(now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return now.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    request = json.load(sys.stdin)
    env = make_env(datetime.fromtimestamp(request["now_ms"] / 1000))
    compiled = {}
    results = []
    for job in request["jobs"]:
        source = job["template"]
        try:
            if source not in compiled:
                compiled[source] = env.from_string(source)
            results.append({"ok": compiled[source].render(**job["context"])})
        except Exception as err:  # noqa: BLE001 - every failure is reported, as transformers would raise it
            results.append({"error": f"{type(err).__name__}: {err}"})
    json.dump(results, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
