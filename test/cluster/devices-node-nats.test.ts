// The node the devices are on dies, on a 3-node NATS cluster (the scenario: devices-node-scenario.ts).
import { devicesNodeDies } from './devices-node-scenario.js';

devicesNodeDies('nats');
