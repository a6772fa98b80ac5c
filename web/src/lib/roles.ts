import type { Job, Role, WhoAmI } from '../api/types';

// The same rules the server enforces (src/auth/roles.*); the UI uses them
// only to hide what would be refused, and the server refuses it anyway.

export function roleIn(me: WhoAmI | null | undefined, project: string): Role | null {
  if (!me) return null;
  return me.projects.find((p) => p.project === project)?.role ?? null;
}

// A token limited to one project acts only there.
function tokenAllows(me: WhoAmI, project: string): boolean {
  const limit = me.auth?.project;
  return !limit || limit === project;
}

export function canSubmitTo(me: WhoAmI | null | undefined, project: string): boolean {
  if (!me || !tokenAllows(me, project)) return false;
  if (me.admin) return true;
  const role = roleIn(me, project);
  return role === 'admin' || role === 'engineer';
}

// Projects where the caller may submit; admins may submit anywhere they see.
export function submitProjects(me: WhoAmI | null | undefined, all: string[] = []): string[] {
  if (!me) return [];
  const mine = me.projects.map((p) => p.project);
  const candidates = me.admin ? Array.from(new Set([...all, ...mine])) : mine;
  return candidates.filter((p) => canSubmitTo(me, p)).sort();
}

export function canSubmit(me: WhoAmI | null | undefined): boolean {
  if (!me) return false;
  if (me.admin) return tokenAllows(me, me.auth?.project ?? '');
  return me.projects.some((p) => canSubmitTo(me, p.project));
}

export function canCancel(me: WhoAmI | null | undefined, job: Pick<Job, 'project' | 'user'>): boolean {
  if (!me || !tokenAllows(me, job.project)) return false;
  if (me.admin) return true;
  const role = roleIn(me, job.project);
  return role === 'admin' || (role === 'engineer' && job.user === me.user);
}

export function isAdmin(me: WhoAmI | null | undefined): boolean {
  return !!me?.admin;
}
