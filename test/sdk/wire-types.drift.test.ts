import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SERVER_ERROR_CODES as clientCodes } from '../../packages/client/src/wire.generated.ts';
import { SERVER_ERROR_CODES as nodeCodes } from '../../packages/node/src/wire.generated.ts';
import { generateSdkWire, SDK_WIRE_FILES } from '../../scripts/sdk-wire.ts';
import { ERROR_CODES } from '../../src/core/errors.ts';

// The SDKs' wire types and error codes come from the server's schemas: a schema or error-code
// change without regenerating them fails here, so the SDKs cannot drift from the server.
describe('SDK wire types', () => {
  it('are what the server schemas generate, in both SDKs', async () => {
    const expected = await generateSdkWire();
    for (const file of SDK_WIRE_FILES) {
      const committed = readFileSync(file, 'utf8');
      expect(committed, `${file} is stale: run \`npm run generate:sdk-wire\` and commit the result`).toBe(expected);
    }
  });

  it('know every error code the server answers with', () => {
    expect([...clientCodes]).toEqual(ERROR_CODES);
    expect([...nodeCodes]).toEqual(ERROR_CODES);
    expect(clientCodes).toContain('service_unavailable');
  });
});
