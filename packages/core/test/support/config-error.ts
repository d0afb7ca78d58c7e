/** The configuration error `fn` throws, for its code, key and message; a failed test if it throws none. */
export function configError(fn: () => unknown): { code: string; key: string | undefined; message: string } {
  try {
    fn();
  } catch (err) {
    return err as { code: string; key: string | undefined; message: string };
  }
  throw new Error('expected a configuration error');
}
