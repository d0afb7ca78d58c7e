/** The kubectl-equivalent test helper, shared with the pod runner's tests through @rollcall/tools. */
export { KubeAdmin as Admin } from '@rollcall/tools/testenv';
