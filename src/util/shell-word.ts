// A word of a command Hearth prints for a person to paste: as it is when a shell takes it so, else in single quotes
// (a device named `Kitchen/Coffee machine`, a note with spaces, a principal's id with a quote in it).
export function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}
