// Build step: the Kubernetes manifests of deploy/kubernetes go into the package
// (dist/manifests) byte for byte, for `rollcall manifests`. A new
// rollcall-<role>.yaml there is a new --role, with nothing else to change.
import { copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';

const from = new URL('../../../deploy/kubernetes/', import.meta.url);
const to = new URL('../dist/manifests/', import.meta.url);
rmSync(to, { recursive: true, force: true });
mkdirSync(to, { recursive: true });
for (const file of readdirSync(from)) if (/^rollcall-.+\.yaml$/.test(file)) copyFileSync(new URL(file, from), new URL(file, to));
