// An HTTP API error: a status and `{error: {code, message, ...}}` on the wire.

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** More members of the error object (`field`, `retryable`...). */
    readonly extra: Record<string, unknown> = {},
    /** Response headers to add (`WWW-Authenticate`, `Allow`). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }

  toJSON(): { error: Record<string, unknown> } {
    return { error: { code: this.code, message: this.message, ...this.extra } };
  }
}

/** 400 naming the field at fault. */
export function badField(field: string, problem: string): HttpError {
  return new HttpError(400, 'bad_request', `${field}: ${problem}`, { field });
}

export const notFound = (message: string) => new HttpError(404, 'not_found', message);

/**
 * 404 for an entity id that does not exist or that the caller may not read: the same status, body and words for
 * both, so no answer tells a caller what exists among what it may not read (Hearth.readableEntity).
 */
export const noEntity = (id: string) => notFound(`no entity ${JSON.stringify(id.slice(0, 100))} that you may read; GET /api/devices lists them`);
export const forbidden = (message: string, code = 'forbidden') => new HttpError(403, code, message);
