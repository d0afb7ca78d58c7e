/** `2026-12-03T04:03:21.1073977Z` → `2026-12-03T04:03:21.107397700Z`: equal width, so strings compare as times. */
export function sortable(time: string): string {
  const match = /^(.*?:\d\d)(?:\.(\d+))?Z$/.exec(time);
  return match ? `${match[1]}.${(match[2] ?? '').padEnd(9, '0')}Z` : time;
}
