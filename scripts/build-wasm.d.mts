/** The module's bytes compiled from src/core/wasm/xxh64.wat. */
export function compile(): Promise<Buffer>;
/** The TypeScript module embedding `bytes`. */
export function render(bytes: Buffer): string;
