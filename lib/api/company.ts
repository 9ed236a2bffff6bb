import { notFound } from '../errors';
import type { Company } from './credentials';

/** A company id in the path must be the caller's own; any other answers 404, never 403. */
export function ownCompany(company: Company, companyId: string): Company {
  if (company.id !== companyId) throw notFound('company', 'company_id');
  return company;
}
