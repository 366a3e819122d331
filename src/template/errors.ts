/** Any error from parsing or executing a Go template (messages follow Go's formats). */
export class TemplateError extends Error {
  override name = "TemplateError";
}

/** "template: NAME:LINE: MESSAGE" */
export class ParseError extends TemplateError {
  override name = "ParseError";
}

/** "template: NAME:LINE:COL: executing \"NAME\" at <NODE>: MESSAGE" */
export class ExecError extends TemplateError {
  override name = "ExecError";
}
