// hearth-audit: every audit row as a message, as it is written (filtered by
// outcome, principal, entity, tool), for alerts and logbooks.
import { AuditFeed, rowFilter } from './lib/audit-feed.js';
import type { StoredAuditRow } from '../dist/audit/row.js';
import { list, str, type RedApi, type RedNode, type RedNodeDef } from './lib/red.js';
import { bridgeOrSayWhy, showBridgeState } from './lib/shell.js';

export default function (RED: RedApi): void {
  function HearthAudit(this: RedNode, def: RedNodeDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    const bridge = bridgeOrSayWhy(RED, node, def, 'once');
    if (!bridge) return;
    const accept = rowFilter({
      outcomes: list(str(def, 'outcomes')),
      principal: str(def, 'principal') || undefined,
      entity: str(def, 'entity') || undefined,
      tool: str(def, 'tool') || undefined,
    });
    const unsubscribe = showBridgeState(RED, node, bridge);
    if (bridge.daemon) {
      // A daemon: the rows it writes (its agent, its API, this flow's calls), as its event stream shows them to the token.
      const daemon = bridge.daemon;
      const sent = new Set<number>();
      const onRow = (raw: Record<string, unknown>) => {
        const row = raw as unknown as StoredAuditRow;
        if (row.outcome === 'pending' || sent.has(row.id) || !accept(row)) return;
        sent.add(row.id);
        if (sent.size > 10_000) sent.delete(sent.values().next().value as number);
        node.send({ topic: `audit/${row.outcome}`, payload: row });
      };
      daemon.on('audit', onRow);
      node.on('close', (_removed, done) => {
        unsubscribe();
        daemon.off('audit', onRow);
        done();
      });
      return;
    }
    let feed: AuditFeed | undefined;
    let closed = false;
    bridge.ready().then(
      (hearth) => {
        if (closed) return;
        feed = new AuditFeed(hearth.audit, (row) => {
          if (accept(row)) node.send({ topic: `audit/${row.outcome}`, payload: row });
        });
        feed.start();
      },
      (err: Error) => node.error(err.message),
    );
    node.on('close', (_removed, done) => {
      closed = true;
      unsubscribe();
      feed?.stop();
      done();
    });
  }
  RED.nodes.registerType('hearth-audit', HearthAudit);
}
