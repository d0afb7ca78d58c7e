/**
 * How a user installs packages today, in one place: every `PLUGIN_NOT_INSTALLED` says it,
 * and every package README's install line has the same form. Until the @rollcall
 * packages are on the npm registry they come from a clone of the repository
 * (`install-from-checkout` vendors their tarballs into the project); once published,
 * this function returns `npm install <packages>` and nothing else changes.
 * A package from outside Rollcall (a dependency) is always `npm install`.
 *
 * @param packages - package names, e.g. `['@rollcall/kubernetes']`
 */
export function installLine(packages: readonly string[]): string {
  const names = packages.join(' ');
  if (!packages.every((p) => p.startsWith('@rollcall/'))) return `npm install ${names}`;
  return `npm --prefix <rollcall checkout> run install-from-checkout -- ${names}   # not on npm yet; published: npm install ${names}`;
}
