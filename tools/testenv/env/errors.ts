/** Every failure of the test environment: the message says what failed and where to look. */
export class TestenvError extends Error {
  override readonly name = 'TestenvError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(`[testenv] ${message}`, options);
  }
}
