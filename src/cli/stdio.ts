// A reader that goes away (`ollamats list | head -1`) is not an error: when stdout's pipe closes the
// command ends at once, quietly, with exit code 0 (Node would otherwise throw EPIPE with a stack
// trace from wherever the next write happened). A closed stderr only silences what goes there.

function isClosedPipe(err: NodeJS.ErrnoException): boolean {
  return err.code === "EPIPE" || err.code === "ERR_STREAM_DESTROYED" || err.code === "ECONNRESET";
}

export function endQuietlyWhenOutputCloses(): void {
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    if (isClosedPipe(err)) process.exit(0);
    throw err;
  });
  process.stderr.on("error", (err: NodeJS.ErrnoException) => {
    if (!isClosedPipe(err)) throw err;
  });
}
