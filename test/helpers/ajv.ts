// A JSON Schema validator for tests: ajv (draft 2020-12) with ajv-formats' full formats; unknown
// keywords and formats are not errors (schemas from clients carry annotations of every kind).
import { Ajv2020 } from "ajv/dist/2020.js";
import formatsModule from "ajv-formats";

type FormatsPlugin = (ajv: Ajv2020) => Ajv2020;
// A CommonJS module: its default import is the plugin under Node, a namespace to TypeScript.
const addFormats = ((formatsModule as unknown as { default?: FormatsPlugin }).default ?? formatsModule) as unknown as FormatsPlugin;

export function makeValidator(): Ajv2020 {
  // multipleOf checked with a tolerance: 0.07 / 0.01 is 7.000000000000001 in floating point.
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true, multipleOfPrecision: 9 });
  addFormats(ajv);
  return ajv;
}
