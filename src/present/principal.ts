// How a principal reads to a person: the name they chose and what it is, not the id's door prefix
// (`http:anna` is "anna (token)", `cli:root` is "root (command line)").
const WHAT: Record<string, string> = {
  cli: 'command line',
  http: 'token',
  mcp: 'MCP client',
  voice: 'voice satellite',
  chat: 'chat',
  flow: 'Node-RED flow',
  agent: 'agent',
};

export function principalWords(id: string): string {
  // The HTTP door with auth off (loopback only) names its one caller so.
  if (id === 'http:local') return 'local (no sign-in)';
  const at = id.indexOf(':');
  if (at < 0) return id;
  const what = WHAT[id.slice(0, at)];
  const name = id.slice(at + 1);
  return what && name ? `${name} (${what})` : id;
}
