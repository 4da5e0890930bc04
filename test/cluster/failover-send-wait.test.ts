// The connected node dies; calls while Hearth is not connected wait up to 5 s for it to be on another node
// (mqtt.send_wait_ms 5000). The scenario: failover-scenario.ts.
import { connectedNodeDies } from './failover-scenario.js';

connectedNodeDies(5000);
