#!/usr/bin/env python3
"""Renders chat templates with Python's Jinja2 the way transformers' apply_chat_template does, as the
reference the daemon's renderer is compared with (test/unit/jinja-differential.test.ts).

The environment mirrors transformers' _compile_jinja_template: ImmutableSandboxedEnvironment with
trim_blocks and lstrip_blocks, the loopcontrols extension, a {% generation %} block that renders its
body, tojson as json.dumps with ensure_ascii=False, and the raise_exception and strftime_now globals.
strftime_now reads a fixed clock (`now_ms`, local time) so both renderers see the same date.
A template the immutable sandbox stops (list.append: Kimi K2's) is rendered again in the mutable
SandboxedEnvironment, as llama.cpp's engine allows it; that answer says "sandbox": "mutable".

stdin: {"now_ms": <epoch ms>, "jobs": [{"template": str, "context": {...}}, ...]}
stdout: [{"ok": str, "sandbox"?: "mutable"} | {"error": str}, ...] in job order.
"""
import json
import sys
from datetime import datetime

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment


class GenerationBlock(Extension):
    """transformers' AssistantTracker without the tracking: {% generation %}body{% endgeneration %} is body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def make_env(now, sandbox=ImmutableSandboxedEnvironment):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return now.strftime(format)

    env = sandbox(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    request = json.load(sys.stdin)
    now = datetime.fromtimestamp(request["now_ms"] / 1000)
    envs = {"immutable": make_env(now), "mutable": make_env(now, SandboxedEnvironment)}
    compiled = {}

    def render(kind, source, context):
        if (kind, source) not in compiled:
            compiled[(kind, source)] = envs[kind].from_string(source)
        return compiled[(kind, source)].render(**context)

    results = []
    for job in request["jobs"]:
        try:
            try:
                results.append({"ok": render("immutable", job["template"], job["context"])})
            except SecurityError:
                results.append({"ok": render("mutable", job["template"], job["context"]), "sandbox": "mutable"})
        except Exception as err:  # noqa: BLE001 - every failure is reported, as transformers would raise it
            results.append({"error": f"{type(err).__name__}: {err}"})
    json.dump(results, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
