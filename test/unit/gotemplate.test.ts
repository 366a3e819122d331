// Unit tests for the Go text/template interpreter. Expected outputs are derived by hand from
// Go's text/template, fmt and encoding/json semantics (Go 1.22+).
import { describe, expect, it } from "vitest";
import {
  GoFloat,
  GoNamed,
  GoStruct,
  ParseError,
  ExecError,
  TemplateError,
  fromJSON,
  jsonPrintable,
  parseTemplate,
  type ExecuteOptions,
  type StructType,
} from "../../src/template/index.js";
import { toolPropertyValue } from "../../src/template/ollama.js";

const render = (text: string, data: unknown = {}, opts?: ExecuteOptions): string => parseTemplate(text, "t").execute(data, opts);
const parseErr = (text: string): string => {
  try {
    parseTemplate(text, "t");
  } catch (e) {
    expect(e).toBeInstanceOf(ParseError);
    expect(e).toBeInstanceOf(TemplateError);
    return (e as Error).message;
  }
  throw new Error("expected a parse error");
};
const execErr = (text: string, data: unknown = {}, opts?: ExecuteOptions): string => {
  try {
    render(text, data, opts);
  } catch (e) {
    expect(e).toBeInstanceOf(ExecError);
    expect(e).toBeInstanceOf(TemplateError);
    return (e as Error).message;
  }
  throw new Error("expected an exec error");
};

type Case = [name: string, template: string, data: unknown, expected: string];
const table = (cases: Case[]): void => {
  for (const [name, t, d, want] of cases) it(name, () => expect(render(t, d)).toBe(want));
};

describe("text, comments, trim markers, literals", () => {
  table([
    ["plain text", "hello, world", {}, "hello, world"],
    ["comment", "a{{/* a comment */}}b", {}, "ab"],
    ["multi-line comment", "a{{/* one\ntwo */}}b", {}, "ab"],
    ["trimmed comment", "a  {{- /* c */ -}}  \n b", {}, "ab"],
    ["left trim", "a \n\t {{- 1 }}", {}, "a1"],
    ["right trim", "{{ 1 -}} \n\t b", {}, "1b"],
    ["both trims", "x\n\n{{- \"y\" -}}\n\nz", {}, "xyz"],
    ["minus number is not a trim", "a {{-3}}", {}, "a -3"],
    ["trim needs the space", "a {{- 3}}", {}, "a3"],
    ["newlines inside an action", "{{ printf\n  \"%s-%s\"\n  \"a\"\n  \"b\" }}", {}, "a-b"],
    ["raw string", "{{ `a\\n\"b\"` }}", {}, 'a\\n"b"'],
    ["raw string with newline", "{{ `x\ny` }}", {}, "x\ny"],
    ["interpreted string escapes", '{{ "a\\tb\\u00e9\\x41\\101\\"" }}', {}, 'a\tbéAA"'],
    ["char constant prints as int", "{{ 'a' }} {{ '\\n' }}", {}, "97 10"],
    ["char constant with %c", "{{ printf \"%c%c\" 'x' '\\u00e9' }}", {}, "xé"],
    ["ints", "{{ 42 }} {{ -7 }} {{ 0x1F }} {{ 0o17 }} {{ 017 }} {{ 0b101 }} {{ 1_000 }}", {}, "42 -7 31 15 15 5 1000"],
    ["floats like strconv 'g'", "{{ 1.5 }} {{ 2.0 }} {{ 1e3 }} {{ 100000.0 }} {{ 1000000.0 }} {{ 1234567.0 }}", {}, "1.5 2 1000 100000 1e+06 1.234567e+06"],
    ["small floats", "{{ 0.0001 }} {{ 0.00001234 }} {{ 1e21 }} {{ -0.5 }}", {}, "0.0001 1.234e-05 1e+21 -0.5"],
    ["bool constants", "{{ true }} {{ false }}", {}, "true false"],
    ["dot", "{{ . }}", "dot", "dot"],
  ]);
});

describe("fields, maps, missing keys", () => {
  const msg: StructType = { name: "main.Msg", fields: [{ name: "Role" }, { name: "Content" }] };
  const data = {
    A: { B: { C: "deep" } },
    Messages: [new GoStruct(msg, { Role: "user", Content: "hi" }), new GoStruct(msg, { Role: "assistant", Content: "yo" })],
    M: { a: 1 },
    S: "str",
    N: null,
  };
  table([
    ["nested map access", "{{ .A.B.C }}", data, "deep"],
    ["struct fields", "{{ range .Messages }}{{ .Role }}={{ .Content }};{{ end }}", data, "user=hi;assistant=yo;"],
    ["chained field on a parenthesized result", "{{ (index .Messages 1).Content }}", data, "yo"],
    ["chained field on a variable", "{{ $m := index .Messages 0 }}{{ $m.Role }}", data, "user"],
    ["missing key prints <no value>", "[{{ .Missing }}]", data, "[<no value>]"],
    ["nil value prints <no value>", "[{{ .N }}]", data, "[<no value>]"],
    ["missing key as an argument is nil", "{{ print .Missing }} {{ printf \"%v\" .Missing }}", data, "<nil> <nil>"],
    ["field of an invalid variable is <no value>", "{{ $x := .Missing }}{{ $x.Foo }}", data, "<no value>"],
    ["$ is the root", "{{ range .Messages }}{{ $.S }}{{ end }}", data, "strstr"],
    ["map printed with %v", "{{ .M }} {{ .A }}", data, "map[a:1] map[B:map[C:deep]]"],
    ["struct printed with %v", "{{ index .Messages 0 }}", data, "{user hi}"],
    ["slice printed with %v", "{{ .L }}", { L: [1, "two", 3.5, true, null, [4]] }, "[1 two 3.5 true <nil> [4]]"],
  ]);

  it("missing key chained is a nil pointer error under missingkey=zero", () => {
    expect(execErr("{{ .Missing.Foo }}", data)).toBe(
      'template: t:1:11: executing "t" at <.Missing.Foo>: nil pointer evaluating interface {}.Foo',
    );
  });
  it("missing key chained is <no value> with the default missingkey option", () => {
    expect(render("{{ .Missing.Foo }}", data, { missingKey: "invalid" })).toBe("<no value>");
  });
  it("unknown struct field", () => {
    expect(execErr("{{ range .Messages }}{{ .Nope }}{{ end }}", data)).toBe(
      'template: t:1:24: executing "t" at <.Nope>: can\'t evaluate field Nope in type main.Msg',
    );
  });
  it("field of a string", () => {
    expect(execErr("{{ .S.Foo }}", data)).toBe('template: t:1:5: executing "t" at <.S.Foo>: can\'t evaluate field Foo in type string');
  });
  it("map key with arguments", () => {
    expect(execErr("{{ .M.a 1 }}", data)).toBe('template: t:1:5: executing "t" at <.M.a>: a is not a method but has arguments');
  });
});

describe("pipelines", () => {
  table([
    ["final arg comes from the pipe", '{{ "b" | printf "%s-%s" "a" }}', {}, "a-b"],
    ["field into function", "{{ .S | len }}", { S: "héllo" }, "6"],
    ["multi stage", '{{ .L | len | printf "n=%d" }}', { L: [1, 2, 3] }, "n=3"],
    ["parenthesized arguments", '{{ printf "%d/%d" (len .L) (index .L 2) }}', { L: [1, 2, 3] }, "3/3"],
    ["nested parens", "{{ len (slice (print .S .S) 1) }}", { S: "ab" }, "3"],
    ["declaration does not print", '{{ $x := "v" }}[{{ $x }}]', {}, "[v]"],
  ]);
  it("non-function with arguments", () => {
    expect(execErr("{{ $x := 1 2 }}")).toBe('template: t:1:9: executing "t" at <1>: can\'t give argument to non-function 1');
  });
  it("nil is not a command", () => {
    expect(execErr("{{ nil }}")).toBe('template: t:1:3: executing "t" at <nil>: nil is not a command');
  });
});

describe("if / else if / else and truthiness", () => {
  const t = "{{ if .V }}T{{ else }}F{{ end }}";
  const values: Array<[unknown, string]> = [
    [false, "F"],
    [true, "T"],
    [0, "F"],
    [1, "T"],
    [0.0, "F"],
    [0.5, "T"],
    [new GoFloat(0), "F"],
    ["", "F"],
    ["x", "T"],
    [[], "F"],
    [[0], "T"],
    [{}, "F"],
    [{ a: 0 }, "T"],
    [null, "F"],
    [undefined, "F"],
    [new GoStruct({ name: "main.S", fields: [] }, {}), "T"],
    [new GoNamed([], { type: "main.L" }), "F"],
  ];
  for (const [v, want] of values) it(`truth of ${JSON.stringify(v) ?? String(v)}`, () => expect(render(t, { V: v })).toBe(want));
  it("missing key is false", () => expect(render(t, {})).toBe("F"));

  const chain = '{{ if eq .R "a" }}A{{ else if eq .R "b" }}B{{ else if .X }}X{{ else }}Z{{ end }}';
  table([
    ["else if 1", chain, { R: "a" }, "A"],
    ["else if 2", chain, { R: "b" }, "B"],
    ["else if 3", chain, { R: "c", X: 1 }, "X"],
    ["else", chain, { R: "c" }, "Z"],
    ["with sets dot", "{{ with .A }}<{{ . }}>{{ end }}", { A: "a" }, "<a>"],
    ["with else", "{{ with .A }}<{{ . }}>{{ else }}none:{{ . }}{{ end }}", { A: "" }, "none:map[A:]"],
    ["else with", "{{ with .A }}a{{ else with .B }}b={{ . }}{{ else }}none{{ end }}", { A: 0, B: 7 }, "b=7"],
    ["with declaration", "{{ with $x := .A }}{{ $x }}{{ . }}{{ end }}", { A: "q" }, "qq"],
  ]);
});

describe("range", () => {
  table([
    ["slice", "{{ range .L }}[{{ . }}]{{ end }}", { L: ["a", "b"] }, "[a][b]"],
    ["index and value", "{{ range $i, $v := .L }}{{ $i }}={{ $v }},{{ end }}", { L: ["a", "b"] }, "0=a,1=b,"],
    ["one variable is the element", "{{ range $v := .L }}{{ $v }}{{ end }}", { L: ["a", "b"] }, "ab"],
    ["else when empty", "{{ range .L }}x{{ else }}empty{{ end }}", { L: [] }, "empty"],
    ["else when missing", "{{ range .Nope }}x{{ else }}none{{ end }}", {}, "none"],
    ["map in sorted key order", "{{ range $k, $v := .M }}{{ $k }}={{ $v }};{{ end }}", { M: { b: 2, c: 3, a: 1, B: 0 } }, "B=0;a=1;b=2;c=3;"],
    ["map values only", "{{ range .M }}{{ . }}{{ end }}", { M: { b: 2, a: 1 } }, "12"],
    ["range over int", "{{ range 3 }}{{ . }}{{ end }}", {}, "012"],
    ["range over int variable", "{{ range $i := 3 }}{{ $i }}{{ end }}", {}, "012"],
    ["range over zero int", "{{ range 0 }}x{{ else }}empty{{ end }}", {}, "empty"],
    [
      "break and continue",
      "{{ range .L }}{{ if eq . 3 }}{{ break }}{{ end }}{{ if eq . 1 }}{{ continue }}{{ end }}{{ . }}{{ end }}",
      { L: [0, 1, 2, 3, 4] },
      "02",
    ],
    ["break only exits the inner range", "{{ range .A }}{{ range $.B }}{{ break }}x{{ end }}{{ . }}{{ end }}", { A: [1, 2], B: [1] }, "12"],
    ["nested range with $", "{{ range $i, $a := .A }}{{ range $.B }}{{ $i }}{{ . }} {{ end }}{{ end }}", { A: ["x", "y"], B: [7] }, "07 17 "],
    ["last-element idiom", "{{ range $i, $_ := .L }}{{ if eq (len (slice $.L $i)) 1 }}last={{ . }}{{ end }}{{ end }}", { L: ["a", "b", "c"] }, "last=c"],
    [
      "range with assignment to outer variables",
      "{{ $i := 0 }}{{ $v := 0 }}{{ range $i, $v = .L }}{{ end }}{{ $i }}{{ $v }}",
      { L: ["a", "b"] },
      "1b",
    ],
  ]);
  it("two variables over an int", () => {
    expect(execErr("{{ range $i, $v := 3 }}{{ end }}")).toBe(
      'template: t:1:19: executing "t" at <3>: can\'t use 3 to iterate over more than one variable',
    );
  });
  it("range over a string", () => {
    expect(execErr("{{ range .S }}{{ end }}", { S: "abc" })).toBe("template: t:1:9: executing \"t\" at <.S>: range can't iterate over abc");
  });
  it("break outside range", () => expect(parseErr("{{ break }}")).toBe("template: t:1: {{break}} outside {{range}}"));
  it("continue outside range", () => expect(parseErr("{{ if 1 }}{{ continue }}{{ end }}")).toBe("template: t:1: {{continue}} outside {{range}}"));
});

describe("variables and scoping", () => {
  table([
    ["shadowing inside if ends at end", "{{ $x := 1 }}{{ if true }}{{ $x := 2 }}{{ $x }}{{ end }}{{ $x }}", {}, "21"],
    ["assignment updates the outer variable", "{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ end }}{{ $x }}", {}, "2"],
    ["assignment in range", "{{ $n := 0 }}{{ range .L }}{{ $n = . }}{{ end }}{{ $n }}", { L: [4, 5] }, "5"],
    ["llama2-style accumulation", '{{ $s := "" }}{{ range .L }}{{ if not $s }}{{ $s = . }}{{ else }}{{ $s = printf "%s\\n\\n%s" $s . }}{{ end }}{{ end }}{{ $s }}', { L: ["a", "b", "c"] }, "a\n\nb\n\nc"],
    ["range variable reset per iteration", "{{ range .L }}{{ $y := . }}{{ $y }}{{ end }}", { L: [1, 2] }, "12"],
  ]);
  it("variable declared in if is gone after end", () => {
    expect(parseErr("{{ if true }}{{ $y := 1 }}{{ end }}{{ $y }}")).toBe('template: t:1: undefined variable "$y"');
  });
  it("range variables are gone after end", () => {
    expect(parseErr("{{ range $i, $v := .L }}{{ end }}{{ $v }}")).toBe('template: t:1: undefined variable "$v"');
  });
  it("assigning an undeclared variable fails at exec", () => {
    expect(execErr("{{ $x = 1 }}")).toBe('template: t:1:8: executing "t" at <1>: undefined variable: $x');
  });
  it("too many declarations", () => {
    expect(parseErr("{{ range $a, $b, $c := .L }}{{ end }}")).toBe("template: t:1: too many declarations in range");
  });
});

describe("define / template / block", () => {
  table([
    ["define and call with and without a pipeline", '{{ define "T" }}[{{ . }}]{{ end }}{{ template "T" "x" }}{{ template "T" }}', {}, "[x][<no value>]"],
    ["template gets dot and $", '{{ define "T" }}{{ .A }}{{ $.A }}{{ end }}{{ template "T" . }}', { A: 1 }, "11"],
    ["block defines and runs", '{{ block "B" .A }}<{{ . }}>{{ end }}|{{ template "B" 2 }}', { A: 1 }, "<1>|<2>"],
    ["define may come after use", '{{ template "L" }}{{ define "L" }}late{{ end }}', {}, "late"],
    [
      "recursion",
      '{{ define "R" }}{{ if . }}{{ index . 0 }}{{ template "R" (slice . 1) }}{{ end }}{{ end }}{{ template "R" .L }}',
      { L: ["a", "b", "c"] },
      "abc",
    ],
  ]);
  it("templates do not see the caller's variables", () => {
    expect(parseErr('{{ $x := 1 }}{{ define "T" }}{{ $x }}{{ end }}')).toBe('template: t:1: undefined variable "$x"');
  });
  it("undefined template", () => {
    expect(execErr('{{ template "nope" }}')).toBe('template: t:1:12: executing "t" at <{{template "nope"}}>: template "nope" not defined');
  });
  it("errors inside a define name the define", () => {
    expect(execErr('{{ define "T" }}{{ .X.Y }}{{ end }}{{ template "T" . }}')).toBe(
      'template: t:1:21: executing "T" at <.X.Y>: nil pointer evaluating interface {}.Y',
    );
  });
  it("multiple definitions", () => {
    expect(parseErr('{{ define "x" }}a{{ end }}{{ define "x" }}b{{ end }}')).toBe(
      'template: t:1: template: multiple definition of template "x"',
    );
  });
  it("an empty redefinition is allowed", () => {
    expect(render('{{ define "x" }}a{{ end }}{{ define "x" }} {{ end }}{{ template "x" }}')).toBe("a");
  });
});

describe("and / or / not", () => {
  const d = { L: [1] };
  table([
    ["and returns the first false", "{{ and 1 0 2 }}", d, "0"],
    ["and returns the last", '{{ and 1 "x" }}', d, "x"],
    ["or returns the first true", '{{ or 0 "" "z" 1 }}', d, "z"],
    ["or returns the last", '{{ or 0 "" }}', d, ""],
    ["and short-circuits", "{{ and 0 (index .L 99) }}", d, "0"],
    ["or short-circuits", "{{ or 1 (index .L 99) }}", d, "1"],
    ["and with a piped final value", "{{ 5 | and 1 }}", d, "5"],
    ["not", "{{ not 0 }} {{ not .L }} {{ not .Missing }}", d, "true false true"],
    ["and of missing", "[{{ and .Missing 1 }}]", d, "[<no value>]"],
  ]);
  it("and needs an argument", () => {
    expect(execErr("{{ and }}")).toBe('template: t:1:3: executing "t" at <and>: wrong number of args for and: want at least 1 got 0');
  });
  it("not needs exactly one", () => {
    expect(execErr("{{ not 1 2 }}")).toBe('template: t:1:3: executing "t" at <not>: wrong number of args for not: want 1 got 2');
  });
});

describe("comparisons", () => {
  const d = { S: "x", N: new GoFloat(3), F: 2.5, L: [1, 2], M: { a: 1 } };
  table([
    ["eq ints", "{{ eq 1 1 }} {{ eq 1 2 }}", d, "true false"],
    ["eq multi", '{{ eq 2 1 2 }} {{ eq "a" "b" "c" }}', d, "true false"],
    ["eq strings", '{{ eq .S "x" }}', d, "true"],
    ["eq bools", "{{ eq true true }}", d, "true"],
    ["eq missing vs value is false", '{{ eq .Missing "x" }}', d, "false"],
    ["eq nil nil", "{{ eq nil nil }} {{ eq .Missing nil }}", d, "true true"],
    ["eq JSON float vs float constant", "{{ eq .N 3.0 }}", d, "true"],
    ["ne", "{{ ne 1 2 }} {{ ne .S \"x\" }}", d, "true false"],
    ["lt le gt ge ints", "{{ lt 1 2 }} {{ le 2 2 }} {{ gt 1 2 }} {{ ge 2 2 }}", d, "true true false true"],
    ["strings compare bytewise", '{{ lt "B" "a" }} {{ gt "é" "z" }}', d, "true true"],
    ["floats", "{{ lt .F 3.0 }} {{ ge 1.5 2.5 }}", d, "true false"],
  ]);
  const cases: Array<[string, string]> = [
    ["{{ eq 1 1.0 }}", 'template: t:1:3: executing "t" at <eq 1 1.0>: error calling eq: incompatible types for comparison: int and float64'],
    ["{{ eq .N 3 }}", 'template: t:1:3: executing "t" at <eq .N 3>: error calling eq: incompatible types for comparison: float64 and int'],
    ['{{ eq 1 "1" }}', 'template: t:1:3: executing "t" at <eq 1 "1">: error calling eq: incompatible types for comparison: int and string'],
    ["{{ eq .L .L }}", 'template: t:1:3: executing "t" at <eq .L .L>: error calling eq: non-comparable type [%!s(int=1) %!s(int=2)]: []interface {}'],
    ["{{ eq 1 }}", 'template: t:1:3: executing "t" at <eq 1>: error calling eq: missing argument for comparison'],
    ["{{ lt true false }}", 'template: t:1:3: executing "t" at <lt true false>: error calling lt: invalid type for comparison'],
    ['{{ lt 1 "a" }}', 'template: t:1:3: executing "t" at <lt 1 "a">: error calling lt: incompatible types for comparison: int and string'],
    ["{{ lt nil 1 }}", 'template: t:1:3: executing "t" at <lt nil 1>: error calling lt: invalid type for comparison'],
    ["{{ ne 1 }}", 'template: t:1:3: executing "t" at <ne>: wrong number of args for ne: want 2 got 1'],
  ];
  for (const [t, want] of cases) it(t, () => expect(execErr(t, d)).toBe(want));
});

describe("len / index / slice", () => {
  const d = { S: "héllo", L: ["a", "b"], M: { a: [10, 20] }, Nested: [[1, 2], [3, 4]] };
  table([
    ["len", '{{ len .S }} {{ len .L }} {{ len .M }} {{ len "" }}', d, "6 2 1 0"],
    ["index slice", "{{ index .L 1 }}", d, "b"],
    ["index map then slice", '{{ index .M "a" 1 }}', d, "20"],
    ["index multi-dim", "{{ index .Nested 1 0 }}", d, "3"],
    ["index missing map key", '{{ index .M "zz" }}', d, "<no value>"],
    ["index of a string is a byte", '{{ index "abc" 1 }}', d, "98"],
    ["index with no indices", "{{ index .L }}", d, "[a b]"],
    ["slice string", '{{ slice "abcdef" 1 3 }}|{{ slice "abc" 1 }}|{{ slice "abc" }}', d, "bc|bc|abc"],
    ["slice slice", "{{ slice .L 1 }} {{ slice .L 0 1 }} {{ slice .L 0 1 2 }}", d, "[b] [a] [a]"],
    ["len of slice idiom", "{{ len (slice .L 1) }}", d, "1"],
  ]);
  const cases: Array<[string, string]> = [
    ["{{ len 3 }}", 'template: t:1:3: executing "t" at <len 3>: error calling len: len of type int'],
    ["{{ len .Missing }}", 'template: t:1:3: executing "t" at <len .Missing>: error calling len: len of nil pointer'],
    ["{{ len 1 2 }}", 'template: t:1:3: executing "t" at <len>: wrong number of args for len: want 1 got 2'],
    ["{{ index .L 5 }}", 'template: t:1:3: executing "t" at <index .L 5>: error calling index: index out of range: 5'],
    ["{{ index .L 2 }}", 'template: t:1:3: executing "t" at <index .L 2>: error calling index: reflect: slice index out of range'],
    ["{{ index .L -1 }}", 'template: t:1:3: executing "t" at <index .L -1>: error calling index: index out of range: -1'],
    ['{{ index .L "x" }}', 'template: t:1:3: executing "t" at <index .L "x">: error calling index: cannot index slice/array with type string'],
    ["{{ index 3 0 }}", 'template: t:1:3: executing "t" at <index 3 0>: error calling index: can\'t index item of type int'],
    ["{{ index .M 1 }}", 'template: t:1:3: executing "t" at <index .M 1>: error calling index: value has type int; should be string'],
    ["{{ index nil 1 }}", 'template: t:1:3: executing "t" at <index nil 1>: error calling index: index of untyped nil'],
    ['{{ slice "abc" 0 1 2 }}', 'template: t:1:3: executing "t" at <slice "abc" 0 1 2>: error calling slice: cannot 3-index slice a string'],
    ['{{ slice "abc" 2 1 }}', 'template: t:1:3: executing "t" at <slice "abc" 2 1>: error calling slice: invalid slice index: 2 > 1'],
    ['{{ slice "abc" 0 4 }}', 'template: t:1:3: executing "t" at <slice "abc" 0 4>: error calling slice: index out of range: 4'],
    ["{{ slice 3 }}", 'template: t:1:3: executing "t" at <slice 3>: error calling slice: can\'t slice item of type int'],
  ];
  for (const [t, want] of cases) it(t, () => expect(execErr(t, d)).toBe(want));
});

describe("print / println / printf", () => {
  const d = { L: [1, "two", true], I: [1, 2], Q: ["a", "b"], M: { b: ["x", "y"], a: 1 }, F: 2.5 };
  table([
    ["print spacing: only between two non-strings", '{{ print "a" 1 2 "b" 3 }}', d, "a1 2b3"],
    ["print of nil", "{{ print .Missing 1 }}", d, "<nil> 1"],
    ["print of containers", "{{ print .L .M }}", d, "[1 two true] map[a:1 b:[x y]]"],
    ["print nothing", "[{{ print }}]", d, "[]"],
    ["println", '{{ println "a" 1 }}', d, "a 1\n"],
    [
      "printf verbs",
      '{{ printf "%s|%d|%v|%q|%x|%X|%f|%.2f|%5d|%-5s|%t|%%|%05.1f|%+d|%e|%g|%o|%b|%c|%U|%8.3f" "str" 42 .L "q\\"s" 255 "hi" 3.14159 2.675 7 "ab" true 3.14159 5 1234.5678 0.0001234 8 5 65 65 3.14159 }}',
      d,
      'str|42|[1 two true]|"q\\"s"|ff|6869|3.141590|2.67|    7|ab   |true|%|003.1|+5|1.234568e+03|0.0001234|10|101|A|U+0041|   3.142',
    ],
    ["printf rounds half to even on exact ties", '{{ printf "%.0f %.0f %.1f %.1f %.2f" 2.5 3.5 0.25 0.35 1.005 }}', d, "2 4 0.2 0.3 1.00"],
    ["printf %g precision", '{{ printf "%.3g %.3g %g %g" 1234.5678 0.5 100000.0 1000000.0 }}', d, "1.23e+03 0.5 100000 1e+06"],
    ["printf flags", '{{ printf "%#x %x % d %08.3f %+.1e %6.2f%%" 255 -255 5 -3.14159 12345.678 99.5 }}', d, "0xff -ff  5 -003.142 +1.2e+04  99.50%"],
    ["printf width/precision from args", '{{ printf "%*d|%-*d|%.*f" 4 1 3 2 1 3.14159 }}', d, "   1|2  |3.1"],
    ["printf string precision", '{{ printf "%.3s|%5.1s|" "abcdef" "xyz" }}', d, "abc|    x|"],
    ["printf argument indexes", '{{ printf "%[2]d %[1]d %d" 1 2 }}', d, "2 1 2"],
    ["printf %v of containers", '{{ printf "%v %d %q" .M .I .Q }}', d, 'map[a:1 b:[x y]] [1 2] ["a" "b"]'],
    ["printf %T", '{{ printf "%T %T %T %T %T %T" 1 1.5 "s" .L .M true }}', d, "int float64 string []interface {} map[string]interface {} bool"],
    ["printf bad verb", '{{ printf "%d|%s|%t" "x" 5 1 }}', d, "%!d(string=x)|%!s(int=5)|%!t(int=1)"],
    ["printf missing", '{{ printf "%d %d" 1 }}', d, "1 %!d(MISSING)"],
    ["printf extra", '{{ printf "%d" 1 2 "x" }}', d, '1%!(EXTRA int=2, string=x)'],
    ["printf nil", '{{ printf "%s|%v|%d" .Missing .Missing .Missing }}', d, "%!s(<nil>)|<nil>|%!d(<nil>)"],
    ["printf no verb", '{{ printf "50%" }}', d, "50%!(NOVERB)"],
    ["printf %x of string with space flag", '{{ printf "% x|%#x" "hi" "hi" }}', d, "68 69|0x6869"],
    ["printf %q unicode", '{{ printf "%q|%+q" "é\\n" "é" }}', d, '"é\\n"|"\\u00e9"'],
    ["float in containers", "{{ print .F (slice .L 0 1) }}", d, "2.5 [1]"],
  ]);
  it("printf format must be a string", () => {
    expect(execErr("{{ printf 3 }}")).toBe('template: t:1:10: executing "t" at <3>: expected string; found 3');
    expect(execErr("{{ printf .N }}", { N: 1 })).toBe('template: t:1:10: executing "t" at <.N>: wrong type for value; expected string; got int');
    expect(execErr("{{ printf .Missing }}", {})).toBe(
      'template: t:1:10: executing "t" at <.Missing>: wrong type for value; expected string; got interface {}',
    );
  });
});

describe("html / js / urlquery / call", () => {
  table([
    ["html", "{{ html \"<a href='x'>\\\"&\\\"</a>\" }}", {}, "&lt;a href=&#39;x&#39;&gt;&#34;&amp;&#34;&lt;/a&gt;"],
    ["html of missing", "{{ html .Missing }}", {}, "&lt;no value&gt;"],
    ["html of several args", '{{ html 1 "a" 2 3 }}', {}, "1a2 3"],
    ["js", "{{ js \"a'b\\\"c<d>e&f=g\\\\h\\n\" }}", {}, "a\\'b\\\"c\\u003Cd\\u003Ee\\u0026f\\u003Dg\\\\h\\u000A"],
    ["urlquery", '{{ urlquery "a b&c=d/é~" }}', {}, "a+b%26c%3Dd%2F%C3%A9~"],
    ["pipe into html", '{{ "<b>" | html }}', {}, "&lt;b&gt;"],
    ["call", "{{ call .F 1 2 }}", { F: (a: number, b: number) => a + b }, "3"],
  ]);
  it("call of nil", () => expect(execErr("{{ call .Missing }}")).toBe('template: t:1:3: executing "t" at <call .Missing>: error calling call: call of nil'));
  it("call of a non-function", () => {
    expect(execErr("{{ call .S }}", { S: "x" })).toBe('template: t:1:3: executing "t" at <call .S>: error calling call: non-function .S of type string');
  });
});

describe("Ollama functions", () => {
  const now = (): Date => new Date(2026, 0, 1, 10, 30);
  it("json is compact and HTML-escaped like encoding/json", () => {
    const d = { O: { b: "<x>&", a: [1.5, true, null], c: { z: 1, y: "\u2028" } }, N: new GoFloat(3) };
    expect(render("{{ json .O }}", d)).toBe('{"a":[1.5,true,null],"b":"\\u003cx\\u003e\\u0026","c":{"y":"\\u2028","z":1}}');
    expect(render('{{ json "tab\\there" }} {{ json .N }} {{ json .Missing }} {{ json 1e21 }} {{ json 0.0000001 }}', d)).toBe(
      '"tab\\there" 3 null 1e+21 1e-7',
    );
    expect(render("{{ json .Bad }}", { Bad: NaN })).toBe("");
  });
  it("json of a struct uses json tags", () => {
    const T: StructType = { name: "main.T", fields: [{ name: "Name", json: "name" }, { name: "Opt", json: "opt,omitempty" }, { name: "Raw" }, { name: "Skip", json: "-" }] };
    expect(render("{{ json . }}", new GoStruct(T, { Name: "n", Opt: "", Raw: [1], Skip: 1 }))).toBe('{"name":"n","Raw":[1]}');
  });
  it("currentDate and yesterdayDate use local time", () => {
    expect(render("{{ currentDate }} {{ yesterdayDate }} {{ currentDate \"ignored\" }}", {}, { now })).toBe("2026-01-01 2025-12-31 2026-01-01");
  });
  it("currentDate takes only strings", () => {
    expect(execErr("{{ currentDate 1 }}", {}, { now })).toBe('template: t:1:15: executing "t" at <1>: expected string; found 1');
  });
  it("toTypeScriptType", () => {
    const props = {
      a: toolPropertyValue({ type: "integer" }),
      b: toolPropertyValue({ type: ["string", "null"] }),
      c: toolPropertyValue({ anyOf: [{ type: "array" }, { type: "object" }] }),
      d: toolPropertyValue({}),
      // a type named like an object's inherited key is no type it knows
      e: toolPropertyValue({ type: ["constructor", "toString"] }),
    };
    expect(render("{{ range $k, $v := .P }}{{ $k }}:{{ toTypeScriptType $v }};{{ end }}{{ toTypeScriptType 1 }}", { P: props })).toBe(
      "a:number;b:string | null;c:any[] | Record<string, any>;d:any;e:any | any;any",
    );
  });
});

describe("Go value model", () => {
  it("JSON-decoded numbers are float64", () => {
    const d = fromJSON({ n: 3, x: 1.5, big: 1e21, m: 100000000 }) as object;
    expect(render("{{ range $k, $v := . }}{{ $k }}={{ $v }};{{ end }}", d)).toBe("big=1e+21;m=1e+08;n=3;x=1.5;");
    expect(render("{{ printf \"%T\" .n }}", d)).toBe("float64");
  });
  it("a JSON key named __proto__ is a key like any other", () => {
    const d = fromJSON(JSON.parse('{"__proto__": {"a": 1}, "b": 2}')) as object;
    expect(render("{{ range $k, $v := . }}{{ $k }};{{ end }}", d)).toBe("__proto__;b;");
  });
  it("JS integers are ints", () => {
    expect(render("{{ .m }} {{ printf \"%T\" .m }}", { m: 100000000 })).toBe("100000000 int");
  });
  it("jsonPrintable prints as JSON but ranges as a map", () => {
    const args = jsonPrintable({ b: 1, a: "x" }, "template.templateArgs");
    expect(render("{{ . }}|{{ range $k, $v := . }}{{ $k }}{{ end }}|{{ .a }}|{{ len . }}|{{ json . }}", args)).toBe('{"a":"x","b":1}|ab|x|2|{"a":"x","b":1}');
  });
  it("a String method is reachable as .String", () => {
    const v = new GoNamed(["a"], { type: "main.T", string: () => "S!" });
    expect(render("{{ .String }} {{ printf \"%s %v %d\" . . . }}", v)).toBe("S! S! S! [%!d(string=a)]");
  });
  it("byte slices", () => {
    expect(render('{{ . }} {{ printf "%s %x" . . }} {{ json . }}', new Uint8Array([104, 105]))).toBe("[104 105] hi 6869 \"aGk=\"");
  });
});

describe("parse errors", () => {
  const cases: Array<[string, string]> = [
    ["{{ .A", "template: t:1: unclosed action"],
    ["{{ .A\n\n", "template: t:3: unclosed action started at t:1"],
    ["{{ foo }}", 'template: t:1: function "foo" not defined'],
    ["{{ if .A }}x", "template: t:1: unexpected EOF"],
    ["{{ end }}", "template: t:1: unexpected {{end}}"],
    ["{{ else }}", "template: t:1: unexpected {{else}}"],
    ["{{ if }}{{ end }}", "template: t:1: missing value for if"],
    ["a\nb\n{{ .A }\n}", 'template: t:3: unexpected "}" in operand'],
    ['{{ "abc }}', "template: t:1: unterminated quoted string"],
    ["{{ .A | 3 }}", "template: t:1: non executable command in pipeline stage 2"],
    ["{{ 3.x }}", 'template: t:1: bad number syntax: "3.x"'],
    ['{{ "x".Y }}', 'template: t:1: unexpected . after term "\\"x\\""'],
    ["{{ (1 }}", "template: t:1: unclosed left paren"],
    ["{{ 1) }}", "template: t:1: unexpected right paren"],
    ["{{ $ }}{{ $x }}", 'template: t:1: undefined variable "$x"'],
    ["{{ range .A }}{{ else }}{{ else }}{{ end }}", "template: t:1: expected end; found {{else}}"],
    ['{{ define "a" }}x', "template: t:1: unexpected EOF"],
    ["{{ /* x */ }}", "template: t:1: unexpected \"/\" in command"],
    ["{{/* x */ }}", "template: t:1: comment ends before closing delimiter"],
    ["{{ .A@ }}", "template: t:1: bad character U+0040 '@'"],
    ["{{ 0x }}", 'template: t:1: illegal number syntax: "0x"'],
    ["{{ 99999999999999999999 }}", 'template: t:1: integer overflow: "99999999999999999999"'],
  ];
  for (const [t, want] of cases) it(JSON.stringify(t), () => expect(parseErr(t)).toBe(want));
  it("uses the template name", () => {
    expect(() => parseTemplate("{{ .A", "")).toThrow("template: :1: unclosed action");
  });
});

describe("references / identifiers", () => {
  const t = parseTemplate(
    '{{ if .System }}{{ .System }}{{ end }}{{ range $i, $m := .Messages }}{{ .Role }}{{ with .ToolCalls }}{{ range . }}{{ .Function.Arguments }}{{ end }}{{ end }}{{ end }}{{ define "x" }}{{ .Suffix }}{{ end }}{{ $.Tools }}',
  );
  it("finds fields anywhere, case-insensitively, including defines", () => {
    for (const f of [".Messages", "Tools", ".Suffix", ".toolcalls", ".Function.Arguments", "Arguments"]) expect(t.references(f)).toBe(true);
    for (const f of [".Response", ".Prompt", ".Function.Name", "Images"]) expect(t.references(f)).toBe(false);
  });
  it("identifiers() matches Ollama's Vars()", () => {
    expect(t.identifiers()).toEqual(["$", "arguments", "function", "messages", "role", "suffix", "system", "toolcalls", "tools"]);
  });
});

describe("idioms from registry templates", () => {
  it("granite's counter: len (printf \"a%*s\" $n \"\")", () => {
    expect(render('{{ $c := 0 }}{{ $c = len (printf "a%*s" $c "") }}{{ $c = len (printf "a%*s" $c "") }}{{ $c }}')).toBe("2");
  });
  it("granite's role prefix test", () => {
    const t = '{{ range .M }}{{ if (and (ge (len .Role) 7) (eq (slice .Role 0 7) "control")) }}[{{ slice .Role 7 }}]{{ else }}{{ .Role }}{{ end }};{{ end }}';
    expect(render(t, { M: [{ Role: "controlthinking" }, { Role: "user" }, { Role: "control" }] })).toBe("[thinking];user;[];");
  });
  it("gpt-oss style property rendering", () => {
    const P = {
      city: toolPropertyValue({ type: "string", description: "City" }),
      n: toolPropertyValue({ type: ["integer", "null"] }),
    };
    const t =
      "{{ range $name, $prop := .P }}{{ if $prop.Description }}// {{ $prop.Description }}\n{{ end }}" +
      "{{ $name }}: {{ if gt (len $prop.Type) 1 }}{{ range $i, $t := $prop.Type }}{{ if $i }} | {{ end }}{{ $t }}{{ end }}{{ else }}{{ index $prop.Type 0 }}{{ end }},\n{{ end }}";
    expect(render(t, { P })).toBe("// City\ncity: string,\nn: integer | null,\n");
  });
  it("a property type prints through its String method", () => {
    const P = { a: toolPropertyValue({ type: "string" }), b: toolPropertyValue({ type: ["string", "null"] }) };
    expect(render("{{ .P.a.Type }}|{{ .P.b.Type }}|{{ json .P.b }}", { P })).toBe('string|[string null]|{"type":["string","null"]}');
  });
});
