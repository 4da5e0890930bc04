// `node --import <this file>`: every module the process resolves is appended to the file named by
// HEARTH_MODULE_LOG (one URL a line), so a test can see what a command loaded.
import { register } from 'node:module';

register(
  'data:text/javascript,' +
    encodeURIComponent(`
import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (process.env.HEARTH_MODULE_LOG) appendFileSync(process.env.HEARTH_MODULE_LOG, r.url + '\\n');
  return r;
}`),
);
