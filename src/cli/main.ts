#!/usr/bin/env node
// The `hearth` command. One file per subcommand beside this one.
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { PACKAGE_ROOT } from '../bridge.js';
import { registerAgentRpc } from './agent-rpc.js';
import { registerApprovals } from './approvals.js';
import { registerAudit } from './audit.js';
import { registerCall } from './call.js';
import { registerChat } from './chat.js';
import { registerDevices } from './devices.js';
import { registerMcp } from './mcp.js';
import { registerMemory } from './memory.js';
import { registerPolicy } from './policy.js';
import { registerSimulate } from './simulate.js';
import { registerStart } from './start.js';
import { registerTools } from './tools.js';
import { registerToken } from './token.js';

// `hearth audit tail -f | head`: the reader went away. Stop quietly, as other command-line tools do.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

const pkg = JSON.parse(readFileSync(`${PACKAGE_ROOT}/package.json`, 'utf8')) as { version: string };

const program = new Command('hearth')
  .description('Hearth: MQTT devices as host tools for an agent, with policy and audit')
  .version(pkg.version)
  .showHelpAfterError();

registerStart(program);
registerDevices(program);
registerSimulate(program);
registerTools(program);
registerCall(program);
registerChat(program);
registerAgentRpc(program);
registerPolicy(program);
registerAudit(program);
registerApprovals(program);
registerToken(program);
registerMcp(program);
registerMemory(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`hearth: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
