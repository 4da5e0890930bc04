// The node the devices are on dies, on a 2-node RabbitMQ cluster (the scenario: devices-node-scenario.ts).
import { devicesNodeDies } from './devices-node-scenario.js';

devicesNodeDies('rabbitmq');
