// The connected node dies; calls while Hearth is not connected are answered at once (mqtt.send_wait_ms 0, the
// default). The scenario: failover-scenario.ts.
import { connectedNodeDies } from './failover-scenario.js';

connectedNodeDies(0);
