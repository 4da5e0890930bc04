// How a command fails in words: a message on stderr and an exit code.

/** Bad input (exit 2 by default) or a thing that is not there (exit 1): printed as `hearth: <message>`. */
export class CliFailure extends Error {
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
    this.name = 'CliFailure';
  }
}

/** Run a command body; a CliFailure becomes a message on stderr and an exit code (anything else goes to main). */
export async function guarded(body: () => Promise<void> | void): Promise<void> {
  try {
    await body();
  } catch (err) {
    if (err instanceof CliFailure) {
      process.stderr.write(`hearth: ${err.message}\n`);
      process.exitCode = err.exitCode;
      return;
    }
    throw err;
  }
}
