// `hearth broker acl`: the access rules an external broker needs so that only Hearth commands devices
// (the embedded broker enforces the same by itself).
import type { Command } from 'commander';
import { writeFileAtomic } from '../audit/chain.js';
import { dynamicSecurityRoles, mosquittoAclFile } from '../devices/broker-acl.js';
import { CliFailure } from './failure.js';
import { configOrExit, loggerFor, withConfigOptions, type CommonFlags } from './options.js';

export function registerBroker(program: Command): void {
  const broker = program.command('broker').description("the MQTT broker's side of the trust boundary");
  withConfigOptions(broker.command('acl'))
    .description('print a mosquitto acl_file (or dynamic-security roles) in which only Hearth publishes on command topics')
    .option('--format <format>', 'acl (mosquitto acl_file) or dynsec (dynamic-security plugin JSON)', 'acl')
    .option('--user <name>', "Hearth's user name on the broker (default: mqtt.username)")
    .option('--wait <ms>', 'how long to wait for discovered devices to arrive', '3000')
    // A shell redirect empties the file before the command runs, so a failure would leave an empty ACL: the
    // file given here is replaced only once the rules are complete.
    .option('--output <file>', 'write the rules to this file (replaced whole, only on success) instead of stdout')
    .action(async (flags: CommonFlags & { format: string; user?: string; wait: string; output?: string }) => {
      if (flags.format !== 'acl' && flags.format !== 'dynsec') throw new CliFailure(`--format: ${JSON.stringify(flags.format)} is not acl or dynsec`);
      const loaded = await configOrExit(flags);
      const hearthUser = flags.user ?? loaded.config.mqtt.username;
      if (!loaded.config.mqtt.url) throw new CliFailure('the embedded broker enforces this itself: `hearth broker acl` is for a broker set with mqtt.url');
      if (!hearthUser) throw new CliFailure('Hearth needs a user of its own on the broker: set mqtt.username (and mqtt.password), or name it with --user');
      const { Bridge } = await import('../bridge.js');
      const log = await loggerFor(loaded, flags.logLevel ?? 'warn');
      const bridge = await Bridge.start({ config: loaded.config, log, connectWaitMs: 5000, announce: false });
      try {
        if (bridge.connection.connected) await bridge.settle(Number(flags.wait) || 3000, { quietMs: 500 });
        else process.stderr.write(`hearth: cannot reach ${bridge.connection.options.url}: the rules cover the device files only\n`);
        const input = { config: loaded.config, devices: bridge.registry.devices(), hearthUser };
        const rules = flags.format === 'acl' ? mosquittoAclFile(input) : `${JSON.stringify(dynamicSecurityRoles(input), null, 2)}\n`;
        // 0644, as a redirect makes it: the rules are no secret, and mosquitto reads them as its own user.
        if (flags.output) writeFileAtomic(flags.output, rules, 0o644);
        else process.stdout.write(rules);
      } finally {
        await bridge.close();
      }
    });
}
