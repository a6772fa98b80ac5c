import { Result } from 'antd';
import { Link, useLocation } from 'react-router-dom';

export default function NotFoundPage() {
  const location = useLocation();
  return (
    <Result
      status="404"
      title="Page not found"
      subTitle={`There is no page at ${location.pathname}.`}
      extra={<Link to="/">Back to Overview</Link>}
    />
  );
}
