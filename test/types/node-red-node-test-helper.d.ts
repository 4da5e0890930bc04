// node-red-node-test-helper ships no types; the tests use load/unload/getNode/settings on it.
declare module 'node-red-node-test-helper' {
  const helper: {
    init(nodeRedRuntime: string, userSettings?: Record<string, unknown>): void;
    load(nodes: unknown, flow: unknown[], credentials?: Record<string, unknown>): Promise<void>;
    unload(): Promise<void>;
    getNode(id: string): any;
    settings(userSettings: Record<string, unknown>): void;
    startServer(): Promise<void>;
    stopServer(): Promise<void>;
    url(): string;
    [key: string]: any;
  };
  export default helper;
}
